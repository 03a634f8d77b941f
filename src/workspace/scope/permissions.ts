/**
 * Read-only scope made physical with file ownership. The worker runs as `worker` uid; files it may not
 * change belong to a separate `guard` uid and lose their write bits; directories holding such files belong
 * to the guard uid with mode 1777 (sticky): the worker can still create files there (caught afterwards as
 * scope violations) but cannot delete, rename or replace a file it does not own. `.git` and writable files
 * belong to the worker.
 *
 * One listing pass only reads (a `find` that never follows symlinks) and produces an ownership plan of what
 * must change, each step carrying the kind and inode the listing saw. A runner that is root applies it
 * directly; one that is not hands it to an `OwnershipApplier` (a short-lived helper container that may chown,
 * see DockerSandboxRuntime.applyOwnership). With neither, only the write bits change, which stops accidents,
 * not a determined worker, and the result says so. Either way the plan is applied through descriptors
 * (ownership-pass.ts): a step whose entry was swapped since the listing is skipped, never followed. No mode
 * the host sets has a setuid or setgid bit.
 */
import * as fs from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import type { OwnershipEntry, OwnershipPassReport } from '../../core/ports.js';
import { AgentRunnerError } from '../../errors.js';
import { applyOwnershipPassInSlices } from './ownership-pass.js';
import type { ScopeMatcher } from './scope.js';

export type { OwnershipEntry };

export interface UserIds {
  uid: number;
  gid: number;
}

/** Applies an ownership plan to the files under `root` (paths in the plan are relative to it). */
export type OwnershipApplier = (
  root: string,
  entries: readonly OwnershipEntry[],
) => Promise<OwnershipPassReport>;

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
  /** Inode number: the pass applies a step only to the entry the listing saw. */
  ino: number;
  /** Relative to the root, `/`-separated; `''` for the root itself. */
  path: string;
}

/**
 * Every entry under `root` (the root included) in one pass: one `find` process printing type, mode, owner
 * and path NUL-separated, never following symlinks. Falls back to an lstat walk where GNU find is missing.
 */
export async function listEntries(root: string): Promise<ListedEntry[]> {
  const listed = await execa('find', [root, '-printf', '%y %m %U %G %i %P\\0'], {
    reject: false,
    encoding: 'utf8',
    stripFinalNewline: false,
    maxBuffer: 1024 * 1024 * 1024,
  });
  if (listed.exitCode !== 0) return walkEntries(root);
  const entries: ListedEntry[] = [];
  for (const record of listed.stdout.split('\0')) {
    if (record.length === 0) continue;
    const [kind = '', mode = '', uid = '', gid = '', ino = ''] = record.split(' ', 5);
    const rest = record.slice(kind.length + mode.length + uid.length + gid.length + ino.length + 5);
    entries.push({
      kind,
      mode: parseInt(mode, 8),
      uid: Number(uid),
      gid: Number(gid),
      ino: Number(ino),
      path: rest,
    });
  }
  return entries;
}

async function walkEntries(root: string): Promise<ListedEntry[]> {
  const entries: ListedEntry[] = [];
  const walk = async (target: string, relative: string): Promise<void> => {
    // An entry removed between the listing of its directory and its lstat (a process still running over the
    // tree) is not there: it is left out, as the pass would find nothing by that name anyway.
    const stats = await lstat(target).catch((error: NodeJS.ErrnoException) => {
      if (relative !== '' && (error.code === 'ENOENT' || error.code === 'ENOTDIR')) return null;
      throw error;
    });
    if (!stats) return;
    const kind = stats.isDirectory() ? 'd' : stats.isSymbolicLink() ? 'l' : 'f';
    entries.push({
      kind,
      mode: stats.mode & 0o7777,
      uid: stats.uid,
      gid: stats.gid,
      ino: stats.ino,
      path: relative,
    });
    if (kind !== 'd') return;
    const names = await readdir(target).catch((error: NodeJS.ErrnoException) => {
      if (relative !== '' && (error.code === 'ENOENT' || error.code === 'ENOTDIR')) return [];
      throw error;
    });
    for (const name of names) {
      await walk(path.join(target, name), relative === '' ? name : `${relative}/${name}`);
    }
  };
  await walk(root, '');
  return entries;
}

/** The plan's kind of a listed entry: a directory, a symlink, or anything else. */
function planKind(kind: string): OwnershipEntry['kind'] {
  return kind === 'd' ? 'd' : kind === 'l' ? 'l' : 'f';
}

/**
 * The ownership plan of a sandbox repository from its listing. `.git` and everything in it belongs to the
 * worker; a file is the worker's when writable in scope, else the guard's without write bits; a directory
 * that holds something read-only (at any depth) belongs to the guard, sticky (when ownership really changes).
 * Modes keep the permission bits only: a setuid or setgid bit the worker set is taken away, never kept.
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
    const permissions = entry.mode & 0o777;
    if (entry.path === '.git' || entry.path.startsWith('.git/')) {
      planned.push({ entry, ids: options.worker, mode: entry.kind === 'l' ? null : permissions | 0o200 });
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
    const mode = entry.kind === 'l' ? null : writable ? permissions | 0o200 : permissions & ~0o222;
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
      kind: planKind(entry.kind),
      ino: entry.ino,
    });
  }
  return { plan, readOnlyFiles, writableFiles };
}

/**
 * The error for a pass that skipped steps: something changed the sandbox repository between the listing and
 * the pass (only a live process can), or a change failed. Read-only scope would not hold for what was
 * skipped, so the preparation stops rather than start the worker on it.
 */
function passError(root: string, report: OwnershipPassReport): AgentRunnerError {
  const first = report.skipped[0];
  const example = first
    ? ` (e.g. ${JSON.stringify(first.path)}: ${first.reason}${first.detail ? `, ${first.detail}` : ''})`
    : '';
  const count = `${report.skippedCount} entr${report.skippedCount === 1 ? 'y' : 'ies'}`;
  return new AgentRunnerError(
    'workspace_failed',
    `Could not set the permissions of ${count} in ${root}${example}: they changed while agent-runner applied ` +
      'them, or could not be changed. A process outside agent-runner may be writing there (a container of the ' +
      'task started by hand: `docker ps --filter label=agent-runner.task`); stop it and run again.',
  );
}

/**
 * Applies ownership and modes to the whole sandbox repository (working tree and `.git`): one listing pass
 * that never follows symlinks, a plan of what must change, applied through descriptors (a step whose entry
 * changed since the listing stops the preparation).
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
    const report =
      useApplier && options.applier
        ? await options.applier(options.sandboxRepoPath, plan)
        : await applyOwnershipPassInSlices(fs, options.sandboxRepoPath, plan, { chown: root });
    if (report.skippedCount > 0) throw passError(options.sandboxRepoPath, report);
  }
  return { readOnlyEnforced: owned, readOnlyFiles, writableFiles };
}

/**
 * The plan that gives every file under `root` back to `owner` (writable directories), so a person who is not
 * root can delete a sandbox whose files belong to the guard uid. Only while no container mounts `root` (the
 * callers remove or stop it first); the pass checks every step against this listing all the same.
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
    const ids = { uid: owner.uid, gid: owner.gid, ino: stats.ino };
    if (stats.isSymbolicLink()) return void plan.push({ path: relative, ...ids, mode: null, kind: 'l' });
    plan.push({
      path: relative,
      ...ids,
      mode: stats.isDirectory() ? 0o700 : (stats.mode & 0o777) | 0o600,
      kind: stats.isDirectory() ? 'd' : 'f',
    });
    if (stats.isDirectory()) {
      const names = await readdir(target).catch(() => [] as string[]);
      for (const name of names)
        await walk(path.join(target, name), relative === '.' ? name : `${relative}/${name}`);
    }
  };
  await walk(root, '.');
  return plan;
}
