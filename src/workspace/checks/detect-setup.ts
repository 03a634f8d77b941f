/**
 * The set-up a repository needs when `sandbox.setup` is not set, detected from its files the way the DoD is
 * (detect-dod-checks.ts; the same lockfile decides the package manager): the install its lockfile names, a
 * Python virtual environment with the project in it, Go's module download. Reads files only; nothing is run.
 * `sandbox.setup` set (`[]` included) wins, so a person can always say exactly what runs.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { lockfileYarn } from '../../toolchain/package-manager-from-lockfile.js';
import type { DetectedCommand } from '../../core/detected-command.js';
import { detectDodChecks, lockfilePackageManager } from './detect-dod-checks.js';

/** The set-up commands and where they came from: `sandbox.setup`, or detected (each with its file). */
export interface ResolvedSetup {
  source: 'config' | 'detected';
  commands: DetectedCommand[];
}

/**
 * The virtual environment's directory in the repository. The checks' clean shell puts its `bin` first on
 * PATH when it exists (dod-checks.ts), so a detected `python3 -m pytest` runs the venv's Python.
 */
export const PYTHON_VENV_DIR = '.venv';

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

/** The build backend is setuptools (or none is named: pip then uses setuptools too). */
function setuptoolsBackend(pyproject: string | null): boolean {
  if (pyproject === null) return true;
  const backend = /^\s*build-backend\s*=\s*["']([^"'\n]+)["']/m.exec(pyproject)?.[1];
  return backend === undefined || backend.startsWith('setuptools');
}

async function pythonSetup(directory: string, names: readonly string[]): Promise<DetectedCommand[]> {
  const requirements = names.filter((name) => /^requirements[\w.-]*\.txt$/.test(name)).sort();
  const pyproject = names.includes('pyproject.toml')
    ? await readText(path.join(directory, 'pyproject.toml'))
    : null;
  // A pyproject.toml that only configures tools (black, ruff, pytest) is no package pip could install.
  const installable = pyproject !== null && /^\[(?:project|build-system|tool\.poetry)\]/m.test(pyproject);
  const project = [
    ...(installable ? ['pyproject.toml'] : []),
    ...(names.includes('setup.py') ? ['setup.py'] : []),
  ];
  if (requirements.length === 0 && project.length === 0) return [];
  const venv = PYTHON_VENV_DIR;
  const decided = [...project, ...requirements].join(', ');
  const commands: DetectedCommand[] = [
    {
      // Debian's Python refuses pip outside a venv; --system-site-packages lets the venv use the toolchain
      // layer's pytest and setuptools. The venv and the install's files are kept out of git status (the
      // sandbox repository's info/exclude), so they never count as the worker's uncommitted changes.
      command:
        `python3 -m venv --system-site-packages ${venv} && exclude="$(git rev-parse --git-path info/exclude)" && ` +
        `mkdir -p "$(dirname "$exclude")" && printf '%s\\n' '/${venv}/' '*.egg-info/' >> "$exclude"`,
      detectedFrom: decided,
    },
  ];
  if (requirements.length > 0)
    commands.push({
      command: `${venv}/bin/pip install ${requirements.map((file) => `-r ${file}`).join(' ')}`,
      detectedFrom: requirements.join(', '),
    });
  if (project.length > 0) {
    // A setuptools build needs no package index: the venv sees the toolchain layer's setuptools.
    const isolation = setuptoolsBackend(pyproject) ? ' --no-build-isolation' : '';
    commands.push({
      command: `${venv}/bin/pip install${isolation} -e .`,
      detectedFrom: project[0] as string,
    });
  }
  return commands;
}

/** Detects the set-up from the files at the top of `directory` (the user's repository, not the sandbox's). */
export async function detectSetup(directory: string): Promise<DetectedCommand[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return [];
  }
  const commands = [...(await javascriptSetup(directory)), ...(await pythonSetup(directory, names))];
  if (commands.some((item) => item.command.startsWith('python3 -m venv'))) {
    const dod = await detectDodChecks(directory);
    // pytest from the toolchain layer when it has it (the venv sees it), else from the package index.
    if (dod.checks.some((check) => check.name === 'pytest'))
      commands.push({
        command: `${PYTHON_VENV_DIR}/bin/python -c 'import pytest' 2>/dev/null || ${PYTHON_VENV_DIR}/bin/pip install pytest`,
        detectedFrom: `the DoD's pytest (${dod.detectedFrom[dod.checks.findIndex((check) => check.name === 'pytest')]})`,
      });
  }
  const goMod = await readText(path.join(directory, 'go.mod'));
  // A module with no requirement has nothing to download.
  if (goMod !== null && /^\s*require\b/m.test(goMod))
    commands.push({ command: 'go mod download', detectedFrom: 'go.mod' });
  return commands;
}

/** `sandbox.setup` when it is set (`[]` included); else the detected set-up. */
export async function resolveSetup(
  configured: readonly string[] | undefined,
  directory: string,
): Promise<ResolvedSetup> {
  if (configured !== undefined)
    return {
      source: 'config',
      commands: configured.map((command) => ({ command, detectedFrom: 'agent-runner.yaml sandbox.setup' })),
    };
  return { source: 'detected', commands: await detectSetup(directory) };
}
