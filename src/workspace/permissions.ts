/**
 * Read-only scope made physical with file ownership. The worker runs as `worker` uid; files it may not
 * change belong to a separate `guard` uid and lose their write bits; directories holding such files belong
 * to the guard uid with mode 1777 (sticky): the worker can still create files there (caught afterwards as
 * scope violations) but cannot delete, rename or replace a file it does not own. `.git` and writable files
 * belong to the worker.
 *
 * The walk only reads (lstat, readdir) and produces an ownership plan. A runner that is root applies it
 * directly; one that is not hands it to an `OwnershipApplier` (a short-lived helper container that may chown,
 * see DockerSandboxRuntime.applyOwnership). With neither, only the write bits change, which stops accidents,
 * not a determined worker, and the result says so.
 */
import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { OwnershipEntry } from '../core/ports.js';
import type { ScopeMatcher } from './scope.js';

export type { OwnershipEntry };

export interface UserIds {
  uid: number;
  gid: number;
}

/** Applies an ownership plan to the files under `root` (paths in the plan are relative to it). */
export type OwnershipApplier = (root: string, entries: readonly OwnershipEntry[]) => Promise<void>;

export interface PermissionsResult {
  /** True when ownership was applied (root, or a privileged applier): read-only paths are kernel-enforced. */
  readOnlyEnforced: boolean;
  readOnlyFiles: number;
  writableFiles: number;
}

/** The guard uid: 10002, or the next one when the worker already uses it. */
export function guardIdsFor(worker: UserIds): UserIds {
  const uid = worker.uid === 10002 ? 10003 : 10002;
  return { uid, gid: uid };
}

export function runnerIsRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

interface Walker {
  scope: ScopeMatcher;
  worker: UserIds;
  guard: UserIds;
  /** Ownership will really change (root or an applier): directories with read-only files become sticky. */
  owned: boolean;
  plan: OwnershipEntry[];
  result: PermissionsResult;
}

function add(walker: Walker, relative: string, ids: UserIds, mode: number | null): void {
  walker.plan.push({ path: relative === '' ? '.' : relative, uid: ids.uid, gid: ids.gid, mode });
}

/** Everything below (and including) `target` belongs to the worker, writable. Never follows symlinks. */
async function giveToWorker(walker: Walker, target: string, relative: string): Promise<void> {
  const stats = await lstat(target);
  if (stats.isSymbolicLink()) return add(walker, relative, walker.worker, null);
  add(walker, relative, walker.worker, (stats.mode & 0o7777 & ~0o1000) | 0o200);
  if (stats.isDirectory()) {
    for (const name of await readdir(target)) {
      await giveToWorker(walker, path.join(target, name), `${relative}/${name}`);
    }
  }
}

/** Returns true when the subtree holds something the worker may not change. */
async function planTree(walker: Walker, target: string, relative: string): Promise<boolean> {
  const stats = await lstat(target);
  if (stats.isDirectory()) {
    let holdsReadOnly = false;
    for (const name of await readdir(target)) {
      const childRelative = relative === '' ? name : `${relative}/${name}`;
      if (relative === '' && name === '.git') {
        await giveToWorker(walker, path.join(target, name), childRelative);
        continue;
      }
      if (await planTree(walker, path.join(target, name), childRelative)) holdsReadOnly = true;
    }
    if (holdsReadOnly)
      add(walker, relative, walker.guard, walker.owned ? 0o1777 : (stats.mode & 0o777) | 0o200);
    else add(walker, relative, walker.worker, (stats.mode & 0o777) | 0o700);
    return holdsReadOnly;
  }
  const writable = walker.scope.isWritable(relative);
  if (writable) walker.result.writableFiles += 1;
  else walker.result.readOnlyFiles += 1;
  const mode = stats.isSymbolicLink()
    ? null
    : writable
      ? (stats.mode & 0o7777) | 0o200
      : stats.mode & 0o7777 & ~0o222;
  add(walker, relative, writable ? walker.worker : walker.guard, mode);
  return !writable;
}

/** Applies a plan on the host: chown (root only) and chmod, never following symlinks. */
async function applyLocally(root: string, entries: readonly OwnershipEntry[], chown: boolean): Promise<void> {
  for (const entry of entries) {
    const target = path.join(root, entry.path);
    if (chown) await lchown(target, entry.uid, entry.gid);
    if (entry.mode !== null) await chmod(target, entry.mode);
  }
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
  /** Used when the runner is not root (or always, when `preferApplier`). */
  applier?: OwnershipApplier;
  preferApplier?: boolean;
}): Promise<PermissionsResult> {
  const root = runnerIsRoot();
  const useApplier = options.applier !== undefined && (options.preferApplier || !root);
  const owned = root || useApplier;
  const walker: Walker = {
    scope: options.scope,
    worker: options.worker,
    guard: options.guard ?? guardIdsFor(options.worker),
    owned,
    plan: [],
    result: { readOnlyEnforced: owned, readOnlyFiles: 0, writableFiles: 0 },
  };
  await planTree(walker, options.sandboxRepoPath, '');
  if (useApplier) await options.applier?.(options.sandboxRepoPath, walker.plan);
  else await applyLocally(options.sandboxRepoPath, walker.plan, root);
  return walker.result;
}

/**
 * The plan that gives every file under `root` back to `owner` (writable directories), so a person who is not
 * root can delete a sandbox whose files belong to the guard uid.
 */
export async function giveBackPlan(root: string, owner: UserIds): Promise<OwnershipEntry[]> {
  const plan: OwnershipEntry[] = [];
  const walk = async (target: string, relative: string): Promise<void> => {
    // A failed recursive delete may still be removing files while this walks: what is gone needs nothing.
    const stats = await lstat(target).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (stats === null) return;
    if (stats.isSymbolicLink())
      return void plan.push({ path: relative, uid: owner.uid, gid: owner.gid, mode: null });
    plan.push({
      path: relative,
      uid: owner.uid,
      gid: owner.gid,
      mode: stats.isDirectory() ? 0o700 : (stats.mode & 0o777) | 0o600,
    });
    if (stats.isDirectory()) {
      const names = await readdir(target).catch(() => [] as string[]);
      for (const name of names) await walk(path.join(target, name), `${relative}/${name}`);
    }
  };
  await walk(root, '.');
  return plan;
}
