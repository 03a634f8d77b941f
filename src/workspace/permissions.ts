/**
 * Read-only scope made physical with file ownership. The worker runs as `worker` uid; files it may not
 * change belong to a separate `guard` uid and lose their write bits; directories holding such files belong
 * to the guard uid with mode 1777 (sticky): the worker can still create files there (caught afterwards as
 * scope violations) but cannot delete, rename or replace a file it does not own. `.git` and writable files
 * belong to the worker. Needs root on the host (chown); without it only the write bits are removed, which
 * stops accidents, not a determined worker, and the result says so.
 */
import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { ScopeMatcher } from './scope.js';

export interface UserIds {
  uid: number;
  gid: number;
}

export interface PermissionsResult {
  /** True when ownership was applied (the runner is root), so read-only paths are enforced by the kernel. */
  readOnlyEnforced: boolean;
  readOnlyFiles: number;
  writableFiles: number;
}

/** The guard uid: 10002, or the next one when the worker already uses it. */
export function guardIdsFor(worker: UserIds): UserIds {
  const uid = worker.uid === 10002 ? 10003 : 10002;
  return { uid, gid: uid };
}

interface Walker {
  scope: ScopeMatcher;
  root: string;
  worker: UserIds;
  guard: UserIds;
  canChown: boolean;
  result: PermissionsResult;
}

async function setOwner(walker: Walker, target: string, ids: UserIds): Promise<void> {
  if (walker.canChown) await lchown(target, ids.uid, ids.gid);
}

/** Everything below (and including) `target` belongs to the worker, writable. Never follows symlinks. */
async function giveToWorker(walker: Walker, target: string): Promise<void> {
  const stats = await lstat(target);
  await setOwner(walker, target, walker.worker);
  if (stats.isSymbolicLink()) return;
  await chmod(target, (stats.mode & 0o7777 & ~0o1000) | 0o200);
  if (stats.isDirectory()) {
    for (const name of await readdir(target)) await giveToWorker(walker, path.join(target, name));
  }
}

/** Returns true when the subtree holds something the worker may not change. */
async function applyTree(walker: Walker, target: string, relative: string): Promise<boolean> {
  const stats = await lstat(target);
  if (stats.isDirectory()) {
    let holdsReadOnly = false;
    for (const name of await readdir(target)) {
      const childRelative = relative === '' ? name : `${relative}/${name}`;
      if (relative === '' && name === '.git') {
        await giveToWorker(walker, path.join(target, name));
        continue;
      }
      if (await applyTree(walker, path.join(target, name), childRelative)) holdsReadOnly = true;
    }
    if (holdsReadOnly) {
      await setOwner(walker, target, walker.guard);
      await chmod(target, walker.canChown ? 0o1777 : (stats.mode & 0o777) | 0o200);
    } else {
      await setOwner(walker, target, walker.worker);
      await chmod(target, (stats.mode & 0o777) | 0o700);
    }
    return holdsReadOnly;
  }
  const writable = walker.scope.isWritable(relative);
  if (writable) walker.result.writableFiles += 1;
  else walker.result.readOnlyFiles += 1;
  await setOwner(walker, target, writable ? walker.worker : walker.guard);
  if (!stats.isSymbolicLink()) {
    await chmod(target, writable ? (stats.mode & 0o7777) | 0o200 : stats.mode & 0o7777 & ~0o222);
  }
  return !writable;
}

/**
 * Applies ownership and modes to the whole sandbox repository (working tree and `.git`), walking with lstat
 * so a symlink planted by the worker never leads the host elsewhere.
 */
export async function applyScopePermissions(options: {
  sandboxRepoPath: string;
  scope: ScopeMatcher;
  worker: UserIds;
  guard?: UserIds;
}): Promise<PermissionsResult> {
  const canChown = typeof process.getuid === 'function' && process.getuid() === 0;
  const walker: Walker = {
    scope: options.scope,
    root: options.sandboxRepoPath,
    worker: options.worker,
    guard: options.guard ?? guardIdsFor(options.worker),
    canChown,
    result: { readOnlyEnforced: canChown, readOnlyFiles: 0, writableFiles: 0 },
  };
  await applyTree(walker, options.sandboxRepoPath, '');
  return walker.result;
}
