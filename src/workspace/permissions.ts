/**
 * Read-only scope made physical with file ownership. The worker runs as `worker` uid; files it may not
 * change belong to a separate `guard` uid and lose their write bits; directories holding such files belong
 * to the guard uid with mode 1777 (sticky): the worker can still create files there (caught afterwards as
 * scope violations) but cannot delete, rename or replace a file it does not own. `.git` and writable files
 * belong to the worker.
 *
 * One listing pass only reads (a `find` that never follows symlinks) and produces an ownership plan of what
 * must change. A runner that is root applies it
 * directly; one that is not hands it to an `OwnershipApplier` (a short-lived helper container that may chown,
 * see DockerSandboxRuntime.applyOwnership). With neither, only the write bits change, which stops accidents,
 * not a determined worker, and the result says so.
 */
import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
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

/**
 * The keeper uid: the sandbox's init, its keeper and the gateway relay run as it, so the worker (another uid,
 * no capabilities) can neither signal nor ptrace them, and the reaper, which ends every process of the
 * worker's uid, leaves them alone. 10004, or the next one the worker and the guard do not use.
 */
export function keeperIdsFor(worker: UserIds): UserIds {
  const taken = new Set([worker.uid, guardIdsFor(worker).uid]);
  let uid = 10004;
  while (taken.has(uid)) uid += 1;
  return { uid, gid: uid };
}

export function runnerIsRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** One file system entry under the sandbox repository, as listed before planning. */
export interface ListedEntry {
  /** `d` directory, `l` symlink, anything else a file-like entry. */
  kind: string;
  mode: number;
  uid: number;
  gid: number;
  /** Relative to the root, `/`-separated; `''` for the root itself. */
  path: string;
}

/**
 * Every entry under `root` (the root included) in one pass: one `find` process printing type, mode, owner
 * and path NUL-separated, never following symlinks. Falls back to an lstat walk where GNU find is missing.
 */
export async function listEntries(root: string): Promise<ListedEntry[]> {
  const listed = await execa('find', [root, '-printf', '%y %m %U %G %P\\0'], {
    reject: false,
    encoding: 'utf8',
    stripFinalNewline: false,
    maxBuffer: 1024 * 1024 * 1024,
  });
  if (listed.exitCode !== 0) return walkEntries(root);
  const entries: ListedEntry[] = [];
  for (const record of listed.stdout.split('\0')) {
    if (record.length === 0) continue;
    const [kind = '', mode = '', uid = '', gid = ''] = record.split(' ', 4);
    const rest = record.slice(kind.length + mode.length + uid.length + gid.length + 4);
    entries.push({ kind, mode: parseInt(mode, 8), uid: Number(uid), gid: Number(gid), path: rest });
  }
  return entries;
}

async function walkEntries(root: string): Promise<ListedEntry[]> {
  const entries: ListedEntry[] = [];
  const walk = async (target: string, relative: string): Promise<void> => {
    const stats = await lstat(target);
    const kind = stats.isDirectory() ? 'd' : stats.isSymbolicLink() ? 'l' : 'f';
    entries.push({ kind, mode: stats.mode & 0o7777, uid: stats.uid, gid: stats.gid, path: relative });
    if (kind !== 'd') return;
    for (const name of await readdir(target)) {
      await walk(path.join(target, name), relative === '' ? name : `${relative}/${name}`);
    }
  };
  await walk(root, '');
  return entries;
}

/**
 * The ownership plan of a sandbox repository from its listing. `.git` and everything in it belongs to the
 * worker; a file is the worker's when writable in scope, else the guard's without write bits; a directory
 * that holds something read-only (at any depth) belongs to the guard, sticky (when ownership really changes).
 */
export function planOwnership(
  entries: readonly ListedEntry[],
  options: { scope: ScopeMatcher; worker: UserIds; guard: UserIds; owned: boolean },
): { plan: OwnershipEntry[]; readOnlyFiles: number; writableFiles: number } {
  const holdsReadOnly = new Set<string>();
  const planned: Array<{ entry: ListedEntry; ids: UserIds; mode: number | null }> = [];
  let readOnlyFiles = 0;
  let writableFiles = 0;
  const directories: ListedEntry[] = [];
  for (const entry of entries) {
    if (entry.path === '.git' || entry.path.startsWith('.git/')) {
      planned.push({
        entry,
        ids: options.worker,
        mode: entry.kind === 'l' ? null : (entry.mode & 0o7777 & ~0o1000) | 0o200,
      });
      continue;
    }
    if (entry.kind === 'd') {
      directories.push(entry);
      continue;
    }
    const writable = options.scope.isWritable(entry.path);
    if (writable) writableFiles += 1;
    else {
      readOnlyFiles += 1;
      // Every ancestor directory holds something read-only; stop at the first one already marked.
      let parent = entry.path;
      do {
        const slash = parent.lastIndexOf('/');
        parent = slash === -1 ? '' : parent.slice(0, slash);
        if (holdsReadOnly.has(parent)) break;
        holdsReadOnly.add(parent);
      } while (parent !== '');
    }
    const mode =
      entry.kind === 'l' ? null : writable ? (entry.mode & 0o7777) | 0o200 : entry.mode & 0o7777 & ~0o222;
    planned.push({ entry, ids: writable ? options.worker : options.guard, mode });
  }
  for (const entry of directories) {
    planned.push(
      holdsReadOnly.has(entry.path)
        ? {
            entry,
            ids: options.guard,
            mode: options.owned ? 0o1777 : (entry.mode & 0o777) | 0o200,
          }
        : { entry, ids: options.worker, mode: (entry.mode & 0o777) | 0o700 },
    );
  }
  // Only what changes: a re-preparation (resume) touches the entries the worker added or changed.
  const plan: OwnershipEntry[] = [];
  for (const { entry, ids, mode } of planned) {
    const ownerChanges = options.owned && (entry.uid !== ids.uid || entry.gid !== ids.gid);
    const modeChanges = mode !== null && mode !== entry.mode;
    if (!ownerChanges && !modeChanges) continue;
    plan.push({
      path: entry.path === '' ? '.' : entry.path,
      uid: ids.uid,
      gid: ids.gid,
      mode: modeChanges ? mode : null,
    });
  }
  return { plan, readOnlyFiles, writableFiles };
}

/** A plan grouped for one `chown` per owner and one `chmod` per mode (NUL-separated path lists). */
export interface GroupedPlan {
  chown: Map<string, string[]>;
  chmod: Map<string, string[]>;
}

export function groupPlan(entries: readonly OwnershipEntry[]): GroupedPlan {
  const grouped: GroupedPlan = { chown: new Map(), chmod: new Map() };
  const push = (map: Map<string, string[]>, key: string, value: string) => {
    const list = map.get(key);
    if (list) list.push(value);
    else map.set(key, [value]);
  };
  for (const entry of entries) {
    push(grouped.chown, `${entry.uid}:${entry.gid}`, entry.path);
    if (entry.mode !== null) push(grouped.chmod, entry.mode.toString(8), entry.path);
  }
  return grouped;
}

/**
 * Applies a plan on the host in a few processes: `xargs chown -h` per owner (root only) and `xargs chmod` per
 * mode (symlinks are never in a chmod list). Falls back to one call per entry where a batch fails.
 */
async function applyLocally(root: string, entries: readonly OwnershipEntry[], chown: boolean): Promise<void> {
  const grouped = groupPlan(entries);
  const batch = async (argv: string[], paths: string[]): Promise<boolean> => {
    const result = await execa('xargs', ['-0', '-r', ...argv], {
      cwd: root,
      input: `${paths.join('\0')}\0`,
      reject: false,
    });
    return result.exitCode === 0;
  };
  if (chown) {
    for (const [owner, paths] of grouped.chown) {
      if (await batch(['chown', '-h', '--', owner], paths)) continue;
      const [uid = 0, gid = 0] = owner.split(':').map(Number);
      for (const relative of paths) await lchown(path.join(root, relative), uid, gid);
    }
  }
  for (const [mode, paths] of grouped.chmod) {
    if (await batch(['chmod', '--', mode], paths)) continue;
    for (const relative of paths) await chmod(path.join(root, relative), parseInt(mode, 8));
  }
}

/**
 * Applies ownership and modes to the whole sandbox repository (working tree and `.git`): one listing pass
 * that never follows symlinks, a plan of what must change, and a few batched processes to apply it.
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
  const { plan, readOnlyFiles, writableFiles } = planOwnership(await listEntries(options.sandboxRepoPath), {
    scope: options.scope,
    worker: options.worker,
    guard: options.guard ?? guardIdsFor(options.worker),
    owned,
  });
  if (plan.length > 0) {
    if (useApplier) await options.applier?.(options.sandboxRepoPath, plan);
    else await applyLocally(options.sandboxRepoPath, plan, root);
  }
  return { readOnlyEnforced: owned, readOnlyFiles, writableFiles };
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
