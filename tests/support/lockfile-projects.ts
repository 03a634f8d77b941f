/**
 * Generated JavaScript projects with a real lockfile written by the real package manager on the host (npm,
 * pnpm through npx, yarn 1 and yarn 4 through corepack; yarn 4 from the npm registry's @yarnpkg/cli-dist),
 * and none of them with a `packageManager` field or an agent-runner.yaml: what a task then installs comes from
 * the lockfile alone. Each project's tests run with uvu (a devDependency, a handful of packages), so a check
 * passes only when the set-up installed it.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';

/** A uvu test file (CommonJS) that requires `../src/<name>.js` and checks `call` is `expected`. */
export function uvuTest(name: string, call: string, expected: string): string {
  return [
    "const { test } = require('uvu');",
    "const assert = require('uvu/assert');",
    `const { ${name} } = require('../src/${name}.js');`,
    `test('${name}', () => assert.is(${call}, ${expected}));`,
    'test.run();',
    '',
  ].join('\n');
}

/** package.json of a package whose `test` is uvu. */
export function uvuPackage(name: string, extra: Record<string, unknown> = {}): string {
  const manifest = {
    name,
    version: '1.0.0',
    private: true,
    scripts: { test: 'uvu test' },
    devDependencies: { uvu: '0.5.6' },
    ...extra,
  };
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

const COREPACK_ENV = {
  COREPACK_ENABLE_AUTO_PIN: '0',
  COREPACK_ENABLE_STRICT: '0',
  COREPACK_ENABLE_DOWNLOAD_PROMPT: '0',
  // yarn 2+ from the npm registry (the machine may reach no other); the tarball's hash is still checked.
  COREPACK_NPM_REGISTRY: 'https://registry.npmjs.org',
  COREPACK_INTEGRITY_KEYS: '0',
};

function run(dir: string, command: string, args: string[], env: Record<string, string> = {}): void {
  execFileSync(command, args, {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
    timeout: 240_000,
  });
}

/** Writes the lockfile of `manager` into `dir` (nothing of the install is kept). */
export function writeLockfile(dir: string, manager: 'npm' | 'pnpm' | 'yarn1' | 'yarn4'): void {
  if (manager === 'npm')
    run(dir, 'npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund']);
  else if (manager === 'pnpm')
    run(dir, 'npx', ['--yes', 'pnpm@9.15.9', 'install', '--lockfile-only'], COREPACK_ENV);
  else if (manager === 'yarn1') {
    run(
      dir,
      'corepack',
      ['yarn@1.22.22', 'install', '--ignore-scripts', '--non-interactive', '--no-bin-links'],
      COREPACK_ENV,
    );
    rmSync(path.join(dir, 'node_modules'), { recursive: true, force: true });
  } else {
    run(dir, 'corepack', ['yarn@4.18.1', 'install', '--mode=update-lockfile'], COREPACK_ENV);
    rmSync(path.join(dir, '.yarn'), { recursive: true, force: true });
  }
}
