/**
 * Generated npm projects for tests and the bench: a package.json with devDependencies and a real
 * package-lock.json resolved from the npm registry (`npm install --package-lock-only`, nothing installed on
 * the host). What `npm ci` then installs in a sandbox comes from the registry too.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export interface NpmProjectOptions {
  name?: string;
  devDependencies: Record<string, string>;
  dependencies?: Record<string, string>;
  scripts?: Record<string, string>;
  /** Extra package.json fields (engines, packageManager, type). */
  extra?: Record<string, unknown>;
  /** A lockfile without `resolved` URLs (npm's omit-lockfile-registry-resolved): npm ci builds them itself. */
  omitResolved?: boolean;
}

/** Writes package.json into `dir` and resolves its package-lock.json from the registry. */
export function writeNpmProject(dir: string, options: NpmProjectOptions): void {
  const manifest = {
    name: options.name ?? 'generated-project',
    version: '1.0.0',
    private: true,
    scripts: options.scripts ?? {},
    ...(options.dependencies ? { dependencies: options.dependencies } : {}),
    devDependencies: options.devDependencies,
    ...options.extra,
  };
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  execFileSync(
    'npm',
    [
      'install',
      '--package-lock-only',
      `--omit-lockfile-registry-resolved=${options.omitResolved ? 'true' : 'false'}`,
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 240_000 },
  );
}

/** A lockfile project with a few hundred packages (the bench's `npm ci` workload). */
export const MEDIUM_DEV_DEPENDENCIES: Record<string, string> = {
  eslint: '8.57.0',
  mocha: '10.4.0',
  webpack: '5.91.0',
  jest: '29.7.0',
};
