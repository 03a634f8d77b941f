/**
 * The set-up a repository needs when `sandbox.setup` is not set, detected from its files the way the DoD is
 * (detect-dod-checks.ts; the same lockfile decides the package manager): the install its lockfile names, a
 * Python virtual environment with the project in it (python-setup.ts: none where the image cannot make one
 * and its Python has what the project declares), Go's module download. Nothing is run in the repository.
 * `sandbox.setup` set (`[]` included) wins, so a person can always say exactly what runs.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { lockfileYarn } from '../../toolchain/package-manager-from-lockfile.js';
import type { DetectedCommand } from '../../core/detected-command.js';
import type { ImagePython } from '../../toolchain/image-python.js';
import { detectDodChecks, lockfilePackageManager } from './detect-dod-checks.js';
import {
  decidePythonSetup,
  pythonSetupError,
  readPythonProject,
  systemPythonNotice,
} from './python-setup.js';

export { PYTHON_VENV_DIR } from './python-setup.js';

/** The set-up commands and where they came from: `sandbox.setup`, or detected (each with its file). */
export interface ResolvedSetup {
  source: 'config' | 'detected';
  commands: DetectedCommand[];
}

/** What the detection may ask of the task's image. Without one (doctor), the files alone decide. */
export interface SetupDetection {
  /** The image's python3 (image-python.ts); asked only for a Python project. */
  imagePython?: () => Promise<ImagePython | null>;
  /** What the detection decided not to run, and why: one progress line each. */
  onNotice?: (line: string) => void;
}

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

async function javascriptSetup(directory: string): Promise<DetectedCommand[]> {
  if (!existsSync(path.join(directory, 'package.json'))) return [];
  const { name, lockfile } = lockfilePackageManager(directory);
  if (lockfile === null) return [];
  if (name === 'npm') return [{ command: 'npm ci', detectedFrom: lockfile }];
  if (name === 'pnpm') return [{ command: 'pnpm install --frozen-lockfile', detectedFrom: lockfile }];
  if (name === 'yarn') {
    const yarn = await lockfileYarn(directory);
    if (yarn === undefined) return [];
    return yarn.berry
      ? [{ command: 'yarn install --immutable', detectedFrom: 'yarn.lock (yarn 2 or later lockfile)' }]
      : [{ command: 'yarn install --frozen-lockfile', detectedFrom: 'yarn.lock (yarn 1 lockfile)' }];
  }
  return [];
}

/** The Python set-up; throws `preflight_failed` (exit 4) when it needs a venv the image cannot make. */
async function pythonSetup(
  directory: string,
  names: readonly string[],
  detection: SetupDetection,
): Promise<DetectedCommand[]> {
  const project = await readPythonProject(directory, names, async () => {
    const dod = await detectDodChecks(directory);
    const index = dod.checks.findIndex((check) => check.name === 'pytest');
    return index < 0 ? undefined : dod.detectedFrom[index];
  });
  if (project === null) return [];
  const image = detection.imagePython ? await detection.imagePython() : null;
  const decision = decidePythonSetup(project, image);
  if (decision.kind === 'refuse') throw pythonSetupError(decision.unmet);
  if (decision.kind === 'system') {
    detection.onNotice?.(systemPythonNotice(decision));
    return [];
  }
  return decision.commands;
}

/**
 * Go builds a module from `vendor/` by default when `vendor/modules.txt` exists and go.mod says go 1.14 or
 * later (1.16 is assumed without a `go` line): its checks need no download, and `go mod download` would fetch
 * every requirement from the proxy anyway, failing for a private module or where the proxy is unreachable.
 */
function goVendored(directory: string, goMod: string): boolean {
  if (!existsSync(path.join(directory, 'vendor', 'modules.txt'))) return false;
  const version = /^\s*go\s+(\d+)\.(\d+)/m.exec(goMod);
  return version === null || Number(version[1]) > 1 || Number(version[2]) >= 14;
}

/** Detects the set-up from the files at the top of `directory` (the user's repository, not the sandbox's). */
export async function detectSetup(
  directory: string,
  detection: SetupDetection = {},
): Promise<DetectedCommand[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return [];
  }
  const commands = [
    ...(await javascriptSetup(directory)),
    ...(await pythonSetup(directory, names, detection)),
  ];
  const goMod = await readText(path.join(directory, 'go.mod'));
  // A module with no requirement has nothing to download; a vendored one builds from vendor/.
  if (goMod !== null && /^\s*require\b/m.test(goMod) && !goVendored(directory, goMod))
    commands.push({ command: 'go mod download', detectedFrom: 'go.mod' });
  return commands;
}

/** `sandbox.setup` when it is set (`[]` included); else the detected set-up. */
export async function resolveSetup(
  configured: readonly string[] | undefined,
  directory: string,
  detection: SetupDetection = {},
): Promise<ResolvedSetup> {
  if (configured !== undefined)
    return {
      source: 'config',
      commands: configured.map((command) => ({ command, detectedFrom: 'agent-runner.yaml sandbox.setup' })),
    };
  return { source: 'detected', commands: await detectSetup(directory, detection) };
}
