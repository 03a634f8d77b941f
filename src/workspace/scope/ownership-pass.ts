/**
 * Applies an ownership plan to a directory the worker can write (the sandbox repository) without ever
 * resolving a path the worker could have swapped. A listing and a later chmod by path are two lookups: between
 * them a worker process can replace a listed file with a symlink to a host file (or a directory with a link to
 * a host directory), and a root chmod/chown by path then changes the host file. So here:
 *
 * - the root is opened once with O_NOFOLLOW; every directory below is opened relative to its parent's
 *   descriptor (`/proc/self/fd/<fd>/<name>`: the kernel resolves the one name inside the directory the
 *   descriptor holds), with O_NOFOLLOW, so no link anywhere on the way is followed;
 * - each entry is opened the same way with O_PATH | O_NOFOLLOW (no read permission needed, no FIFO or device
 *   is opened for I/O; a symlink gives a descriptor of the link itself), and fstat of that descriptor must say
 *   the kind and inode the listing saw, else the step is skipped and reported;
 * - chown and chmod act on the descriptor (`/proc/self/fd/<fd>`, the kernel's way to reach the very inode an
 *   O_PATH descriptor holds, as glibc's fchmodat does); a symlink is never chmod-ed, and only lchown-ed by its
 *   name in the held parent directory (which never follows it);
 * - no mode has a setuid or setgid bit (`& 0o1777`), whatever the plan says.
 *
 * The same functions run on the host (in-process, in slices so the event loop goes on) and, serialised as a script, in the
 * ownership helper container (a runner that is not root): so they use nothing but their arguments and
 * globals. Linux only (/proc is required, as for src/sandbox/worker-files.ts).
 */
import type * as NodeFs from 'node:fs';
import type { OwnershipEntry, OwnershipPassReport, OwnershipSkipReason } from '../../core/ports.js';

export type { OwnershipPassReport };

type Fs = typeof NodeFs;

interface PassState {
  fs: Fs;
  chown: boolean;
  report: OwnershipPassReport;
  /** The directories open from the root down to the current one (the root is `stack[0]`, name ''). */
  stack: { name: string; fd: number }[];
}

/** Opens `name` in the directory held by `parentFd` without following a link; the errno code on failure. */
function passOpen(state: PassState, parentFd: number, name: string): number | string {
  // O_PATH is not in Node's constants; 010000000 on every Linux architecture Docker runs on (x86-64, arm64).
  const O_PATH = 0o10000000;
  try {
    return state.fs.openSync(`/proc/self/fd/${parentFd}/${name}`, O_PATH | state.fs.constants.O_NOFOLLOW);
  } catch (error) {
    return String((error as NodeJS.ErrnoException).code ?? 'EIO');
  }
}

function passSkip(state: PassState, path: string, reason: OwnershipSkipReason, detail?: string): void {
  state.report.skippedCount += 1;
  if (state.report.skipped.length < 50)
    state.report.skipped.push(detail === undefined ? { path, reason } : { path, reason, detail });
}

/** Why an open failed: nothing there, or something else than the listing saw (a link where a name was). */
function passOpenFailure(code: string): OwnershipSkipReason {
  return code === 'ENOENT' ? 'gone' : 'changed';
}

/**
 * The descriptor of directory `dirs` (components below the root), opening what is not open yet; keeps the
 * common prefix with the directories already open. A string: why it could not be reached.
 */
function passDescend(state: PassState, dirs: readonly string[]): number | string {
  let common = 0;
  while (
    common < dirs.length &&
    common + 1 < state.stack.length &&
    state.stack[common + 1]?.name === dirs[common]
  )
    common += 1;
  while (state.stack.length > common + 1) state.fs.closeSync(state.stack.pop()?.fd as number);
  for (let index = common; index < dirs.length; index += 1) {
    const name = dirs[index] as string;
    const parent = state.stack[state.stack.length - 1]?.fd as number;
    const fd = passOpen(state, parent, name);
    if (typeof fd === 'string') return fd;
    if (!state.fs.fstatSync(fd).isDirectory()) {
      state.fs.closeSync(fd);
      return 'ENOTDIR';
    }
    state.stack.push({ name, fd });
  }
  return state.stack[state.stack.length - 1]?.fd as number;
}

/** Applies one step to the entry held by `fd` (named `name` in the directory held by `parentFd`). */
function passApply(
  state: PassState,
  entry: OwnershipEntry,
  fd: number,
  parentFd: number,
  name: string,
): void {
  const stats = state.fs.fstatSync(fd);
  const kind = stats.isDirectory() ? 'd' : stats.isSymbolicLink() ? 'l' : 'f';
  if (kind !== entry.kind || stats.ino !== entry.ino) return passSkip(state, entry.path, 'changed');
  try {
    if (state.chown && (stats.uid !== entry.uid || stats.gid !== entry.gid)) {
      // lchown never follows the last name, and the directory part is the descriptor the walk holds.
      if (kind === 'l') state.fs.lchownSync(`/proc/self/fd/${parentFd}/${name}`, entry.uid, entry.gid);
      else state.fs.chownSync(`/proc/self/fd/${fd}`, entry.uid, entry.gid);
    }
    if (entry.mode !== null && kind !== 'l') state.fs.chmodSync(`/proc/self/fd/${fd}`, entry.mode & 0o1777);
    state.report.applied += 1;
  } catch (error) {
    passSkip(state, entry.path, 'failed', String((error as NodeJS.ErrnoException).code ?? error));
  }
}

/** One step: reach its directory through descriptors, open the entry, check it, apply. */
function passStep(state: PassState, entry: OwnershipEntry): void {
  const parts = entry.path === '.' || entry.path === '' ? [] : entry.path.split('/');
  if (parts.some((part) => part === '' || part === '.' || part === '..'))
    return passSkip(state, entry.path, 'changed', 'not a plain relative path');
  const isDirectory = entry.kind === 'd';
  const dirs = isDirectory ? parts : parts.slice(0, -1);
  const reached = passDescend(state, dirs);
  if (typeof reached === 'string') return passSkip(state, entry.path, passOpenFailure(reached));
  if (isDirectory) {
    const parentFd = state.stack[Math.max(0, state.stack.length - 2)]?.fd as number;
    return passApply(state, entry, reached, parentFd, parts[parts.length - 1] ?? '.');
  }
  const name = parts[parts.length - 1] as string;
  const fd = passOpen(state, reached, name);
  if (typeof fd === 'string') return passSkip(state, entry.path, passOpenFailure(fd));
  try {
    passApply(state, entry, fd, reached, name);
  } finally {
    state.fs.closeSync(fd);
  }
}

/** Orders steps by path, component by component: a directory before what it holds, siblings together. */
export function compareStepPaths(a: OwnershipEntry, b: OwnershipEntry): number {
  const left = a.path === '.' ? [] : a.path.split('/');
  const right = b.path === '.' ? [] : b.path.split('/');
  for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
    if (left[index] !== right[index]) return (left[index] as string) < (right[index] as string) ? -1 : 1;
  }
  return left.length - right.length;
}

/**
 * Applies `entries` (paths relative to `root`) through descriptors; `chown` false changes modes only (a runner
 * that is neither root nor has a helper). Every step is checked against what the listing saw; what does not
 * match is skipped and reported, never followed.
 */
export function applyOwnershipPass(
  fs: Fs,
  root: string,
  entries: readonly OwnershipEntry[],
  options: { chown: boolean },
): OwnershipPassReport {
  const report: OwnershipPassReport = { applied: 0, skippedCount: 0, skipped: [] };
  const rootFd = fs.openSync(
    root,
    fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW,
  );
  const state: PassState = { fs, chown: options.chown, report, stack: [{ name: '', fd: rootFd }] };
  // Parents before children and siblings together, so each directory is opened once.
  const sorted = [...entries].sort(compareStepPaths);
  try {
    for (const entry of sorted) passStep(state, entry);
  } finally {
    for (const open of state.stack) fs.closeSync(open.fd);
  }
  return report;
}

/**
 * The same pass as a CommonJS script for `node -e SCRIPT MANIFEST` (the helper container's own node): reads
 * `{ entries }` from the manifest file, applies it under `root` with chown, prints the report as one JSON line
 * (the first five skipped steps).
 */
export function ownershipPassScript(root: string): string {
  const helpers = [passOpen, passSkip, passOpenFailure, passDescend, passApply, passStep, compareStepPaths];
  return [
    "'use strict';",
    ...helpers.map(String),
    `const pass = ${String(applyOwnershipPass)};`,
    "const fs = require('fs');",
    "const manifest = JSON.parse(fs.readFileSync(process.argv[1], 'utf8'));",
    `const report = pass(fs, ${JSON.stringify(root)}, manifest.entries, { chown: true });`,
    // Short, on a line of its own: the caller reads it from the tail of the container's log.
    'const skipped = report.skipped.slice(0, 5).map((s) => ({ ...s, path: s.path.slice(0, 200) }));',
    "process.stdout.write('\\n' + JSON.stringify({ ...report, skipped }) + '\\n');",
  ].join('\n');
}

/**
 * The pass on the host, in slices of `slice` steps with a turn of the event loop between them (100,000 steps
 * take seconds on a loaded machine; the gateway and the planning go on meanwhile). Each slice starts again from
 * the root descriptor.
 */
export async function applyOwnershipPassInSlices(
  fs: Fs,
  root: string,
  entries: readonly OwnershipEntry[],
  options: { chown: boolean; slice?: number },
): Promise<OwnershipPassReport> {
  const sorted = [...entries].sort(compareStepPaths);
  const size = options.slice ?? 2000;
  const total: OwnershipPassReport = { applied: 0, skippedCount: 0, skipped: [] };
  for (let start = 0; start < sorted.length; start += size) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    const report = applyOwnershipPass(fs, root, sorted.slice(start, start + size), options);
    total.applied += report.applied;
    total.skippedCount += report.skippedCount;
    total.skipped.push(...report.skipped.slice(0, 50 - total.skipped.length));
  }
  return total;
}
