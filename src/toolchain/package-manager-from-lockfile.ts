/**
 * The package manager a repository with a lockfile and no `packageManager` field needs, from its own files
 * (never run): agent-runner chose it from the lockfile, so it provides it (through corepack, like a
 * `packageManager`).
 *
 * - `pnpm-lock.yaml`: the newest pnpm of the major that writes its `lockfileVersion` (9.x: pnpm 9, 6.x: pnpm 8,
 *   5.x: pnpm 7); none for another version.
 * - A yarn 1 lockfile (`# yarn lockfile v1`, no `__metadata`): yarn 1.22.22, the last yarn 1.
 * - A berry lockfile (`__metadata:`): the version in `.yarnrc.yml`'s `yarnPath`
 *   (`.yarn/releases/yarn-4.5.3.cjs`) when it names one, since that is the yarn the project runs; else the
 *   newest release of the major the lockfile's `__metadata.version` was written by (4 or less: yarn 2, 5 and 6:
 *   yarn 3, 7 and up: yarn 4). `.yarnrc.yml` itself stays out of the sandbox (it may hold registry tokens), so
 *   `yarnPath` is read here, on the host, as a version only.
 *
 * Files are attacker-controlled text: only a plain version is taken from them.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

async function readText(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').catch(() => undefined);
}

/** The yarn releases provided when the lockfile decides (each on the npm registry as `@yarnpkg/cli-dist`). */
export const PROVIDED_YARN = { classic: '1.22.22', 2: '2.4.2', 3: '3.8.7', 4: '4.18.1' } as const;

/** The pnpm releases provided per `lockfileVersion` major of pnpm-lock.yaml. */
export const PROVIDED_PNPM: Record<string, string> = { '9': '9.15.9', '6': '8.15.9', '5': '7.33.7' };

/** The pnpm for the repository at `root`, or undefined without a pnpm-lock.yaml of a known version. */
export async function lockfilePnpm(root: string): Promise<{ version: string; source: string } | undefined> {
  const text = await readText(path.join(root, 'pnpm-lock.yaml'));
  const major = text === undefined ? undefined : /^lockfileVersion:\s*["']?(\d+)\./m.exec(text)?.[1];
  const version = major === undefined ? undefined : PROVIDED_PNPM[major];
  return version === undefined
    ? undefined
    : { version, source: `pnpm-lock.yaml (lockfileVersion ${major}.x)` };
}

export interface LockfileYarn {
  version: string;
  /** yarn 2 or later (a berry lockfile): installs with `--immutable`, not `--frozen-lockfile`. */
  berry: boolean;
  /** What decided the version, for the progress and the note. */
  source: string;
}

/** The lockfile's `__metadata.version`, or undefined when it has no `__metadata` (yarn 1). */
export function berryLockfileVersion(lockfile: string): number | undefined {
  const metadata = /^__metadata:\s*\n((?:[ \t]+.*\n?)*)/m.exec(lockfile);
  if (!metadata) return undefined;
  const version = /^\s+version:\s*["']?(\d{1,3})["']?\s*$/m.exec(metadata[1] ?? '');
  return version?.[1] ? Number(version[1]) : 0;
}

/** `yarnPath: .yarn/releases/yarn-4.5.3.cjs` → `4.5.3`. */
export function yarnPathVersion(yarnrc: string): string | undefined {
  const match = /^yarnPath:\s*["']?[^\s"']*?yarn-(\d{1,3}\.\d{1,3}\.\d{1,3})\.c?js["']?\s*$/m.exec(yarnrc);
  return match?.[1];
}

function berryForLockfileVersion(version: number): string {
  if (version <= 4) return PROVIDED_YARN[2];
  if (version <= 6) return PROVIDED_YARN[3];
  return PROVIDED_YARN[4];
}

/** The yarn for the repository at `root`, or undefined when it has no readable `yarn.lock`. */
export async function lockfileYarn(root: string): Promise<LockfileYarn | undefined> {
  if (!existsSync(path.join(root, 'yarn.lock'))) return undefined;
  const text = await readText(path.join(root, 'yarn.lock'));
  if (text === undefined) return undefined;
  const metadata = berryLockfileVersion(text);
  if (metadata === undefined)
    return { version: PROVIDED_YARN.classic, berry: false, source: 'yarn.lock (yarn 1 lockfile)' };
  const yarnrc = await readText(path.join(root, '.yarnrc.yml'));
  const pinned = yarnrc === undefined ? undefined : yarnPathVersion(yarnrc);
  if (pinned !== undefined && Number(pinned.split('.')[0]) >= 2)
    return { version: pinned, berry: true, source: '.yarnrc.yml yarnPath' };
  return {
    version: berryForLockfileVersion(metadata),
    berry: true,
    source: `yarn.lock (__metadata version ${metadata})`,
  };
}
