/**
 * Finding DoD checks in a repository when none are configured: package.json scripts (with the package
 * manager its lockfile names), a Makefile `test` target, go.mod, Cargo.toml, pytest configuration.
 * Reads files only; nothing is executed.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { DodCheck } from '../../config/schema.js';
import type { DetectedCommand } from '../../core/detected-command.js';

export interface DetectedDodChecks {
  checks: DodCheck[];
  /** One line per check saying where it came from, for the note and the console. */
  detectedFrom: string[];
}

const DEFAULT_TIMEOUT_MS = 600_000;
const NPM_PLACEHOLDER_TEST = /no test specified/;
const SCRIPT_ORDER = ['typecheck', 'lint', 'build', 'test'] as const;

/** Adds one detected check: its command with what decided it (the set-up detection's type too). */
function add(found: DetectedDodChecks, name: string, detected: DetectedCommand): void {
  found.checks.push({ name, command: detected.command, timeout: DEFAULT_TIMEOUT_MS });
  found.detectedFrom.push(detected.detectedFrom);
}

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * The package manager a JavaScript project uses, from its lockfile (the first found, pnpm before yarn before
 * bun before npm); npm with no lockfile. The set-up detection (detect-setup.ts) reads it the same way.
 */
export function lockfilePackageManager(directory: string): { name: string; lockfile: string | null } {
  const candidates: [string, string][] = [
    ['pnpm-lock.yaml', 'pnpm'],
    ['yarn.lock', 'yarn'],
    ['bun.lockb', 'bun'],
    ['bun.lock', 'bun'],
    ['package-lock.json', 'npm'],
    ['npm-shrinkwrap.json', 'npm'],
  ];
  for (const [lockfile, name] of candidates) {
    if (existsSync(path.join(directory, lockfile))) return { name, lockfile };
  }
  return { name: 'npm', lockfile: null };
}

function scriptCommand(manager: string, script: string): string {
  if (script === 'test' && manager !== 'bun') return `${manager} test`;
  return `${manager} run ${script}`;
}

async function fromPackageJson(directory: string, found: DetectedDodChecks): Promise<void> {
  const text = await readText(path.join(directory, 'package.json'));
  if (text === null) return;
  let scripts: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(text) as { scripts?: unknown };
    if (parsed.scripts && typeof parsed.scripts === 'object')
      scripts = parsed.scripts as Record<string, unknown>;
  } catch {
    return;
  }
  const manager = lockfilePackageManager(directory);
  const managerNote = manager.lockfile
    ? `${manager.name} (from ${manager.lockfile})`
    : `${manager.name} (no lockfile)`;
  for (const script of SCRIPT_ORDER) {
    const body = scripts[script];
    if (typeof body !== 'string' || body.trim() === '') continue;
    if (script === 'test' && NPM_PLACEHOLDER_TEST.test(body)) continue;
    add(found, script, {
      command: scriptCommand(manager.name, script),
      detectedFrom: `package.json scripts.${script} via ${managerNote}`,
    });
  }
}

async function fromMakefile(directory: string, found: DetectedDodChecks): Promise<void> {
  for (const name of ['GNUmakefile', 'makefile', 'Makefile']) {
    const text = await readText(path.join(directory, name));
    if (text !== null && /^test\s*:(?!=)/m.test(text)) {
      add(found, 'make test', { command: 'make test', detectedFrom: `${name} target test` });
      return;
    }
  }
}

async function fromPython(directory: string, found: DetectedDodChecks): Promise<void> {
  const pyproject = await readText(path.join(directory, 'pyproject.toml'));
  const setupCfg = await readText(path.join(directory, 'setup.cfg'));
  const toxIni = await readText(path.join(directory, 'tox.ini'));
  const source = existsSync(path.join(directory, 'pytest.ini'))
    ? 'pytest.ini'
    : pyproject !== null && /\[tool\.pytest|pytest/.test(pyproject)
      ? 'pyproject.toml'
      : setupCfg !== null && /\[tool:pytest\]/.test(setupCfg)
        ? 'setup.cfg [tool:pytest]'
        : toxIni !== null && /\[pytest\]/.test(toxIni)
          ? 'tox.ini [pytest]'
          : existsSync(path.join(directory, 'conftest.py'))
            ? 'conftest.py'
            : null;
  if (source === null) return;
  add(found, 'pytest', { command: 'python3 -m pytest', detectedFrom: source });
}

/** Detects checks from the files at the top of `directory` (the repository root or the sandbox repository). */
export async function detectDodChecks(directory: string): Promise<DetectedDodChecks> {
  const found: DetectedDodChecks = { checks: [], detectedFrom: [] };
  await fromPackageJson(directory, found);
  await fromMakefile(directory, found);
  if (existsSync(path.join(directory, 'go.mod'))) {
    add(found, 'go test', { command: 'go test ./...', detectedFrom: 'go.mod' });
  }
  if (existsSync(path.join(directory, 'Cargo.toml'))) {
    add(found, 'cargo test', { command: 'cargo test', detectedFrom: 'Cargo.toml' });
  }
  await fromPython(directory, found);
  return found;
}

export interface ResolvedDodChecks extends DetectedDodChecks {
  source: 'config' | 'detected';
  skip: boolean;
}

/** Configured checks win; with none configured they are detected. `detectedFrom` says which it was. */
export async function resolveDodChecks(
  dod: { checks?: DodCheck[]; skip: boolean },
  directory: string,
): Promise<ResolvedDodChecks> {
  if (dod.checks !== undefined) {
    return {
      checks: dod.checks,
      detectedFrom: dod.checks.map(() => 'agent-runner.yaml dod.checks'),
      source: 'config',
      skip: dod.skip,
    };
  }
  return { ...(await detectDodChecks(directory)), source: 'detected', skip: dod.skip };
}
