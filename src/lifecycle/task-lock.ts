/**
 * One task, one runner: `.agent-runner/runs/<TASK-ID>/lock`, created with O_EXCL and holding the holder's pid,
 * hostname and start time. A second `run`/`resume` of the same task id is refused while the holder lives
 * (exit 2, naming the holder); a lock left by a dead process on this host is taken over.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';
import path from 'node:path';
import { EnvironmentError, UserError } from '../errors.js';
import { livenessOf, type Liveness } from './process-liveness.js';

export const LOCK_FILE = 'lock';
/** A lock file younger than this with unreadable content is one being written right now, not a stale one. */
const FRESH_LOCK_MS = 5_000;
/** A takeover marker older than this was left by a process that died mid-takeover. */
const STALE_TAKEOVER_MS = 30_000;

/** What a lock file holds. */
export interface LockHolder {
  pid: number;
  hostname: string;
  /** ISO time the holder took the lock. */
  startedAt: string;
  /** `run` or `resume`. */
  command: string;
  taskId: string;
}

/** A held lock; `release()` removes the file if it is still ours. */
export interface TaskLock {
  readonly file: string;
  readonly holder: LockHolder;
  /** Whether a stale lock of a dead process was taken over. */
  readonly tookOver: LockHolder | null;
  release(): void;
}

export interface AcquireTaskLockOptions {
  taskId: string;
  command: string;
  /** For tests: who we claim to be. */
  pid?: number;
  hostname?: string;
  now?: () => Date;
}

/** Reads a lock file; null when absent or unreadable. */
export function readTaskLock(runDir: string): LockHolder | null {
  try {
    const parsed = JSON.parse(readFileSync(path.join(runDir, LOCK_FILE), 'utf8')) as Partial<LockHolder>;
    if (typeof parsed.pid !== 'number' || typeof parsed.hostname !== 'string') return null;
    return {
      pid: parsed.pid,
      hostname: parsed.hostname,
      startedAt: String(parsed.startedAt ?? ''),
      command: String(parsed.command ?? 'run'),
      taskId: String(parsed.taskId ?? ''),
    };
  } catch {
    return null;
  }
}

/** The lock's holder and whether it is alive, or null when the task is not locked. */
export function inspectTaskLock(
  runDir: string,
  localHostname = osHostname(),
): { holder: LockHolder; liveness: Liveness } | null {
  const holder = readTaskLock(runDir);
  return holder ? { holder, liveness: livenessOf(holder, localHostname) } : null;
}

function tryCreate(file: string, holder: LockHolder): boolean {
  let descriptor: number;
  try {
    descriptor = openSync(file, 'wx', 0o644);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code === 'ENOSPC')
      throw new EnvironmentError(
        'disk_full',
        `The disk is full: cannot create ${file}. Free some space under ${path.dirname(file)} and run again.`,
        { cause: error },
      );
    throw error;
  }
  try {
    writeSync(descriptor, `${JSON.stringify(holder)}\n`);
  } finally {
    closeSync(descriptor);
  }
  return true;
}

function ageMs(file: string): number {
  try {
    return Date.now() - statSync(file).mtimeMs;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

function lockedError(taskId: string, file: string, holder: LockHolder, liveness: Liveness): UserError {
  const where =
    liveness === 'unknown'
      ? `on another machine (${holder.hostname}); agent-runner cannot check it from here`
      : `on this machine (${holder.hostname})`;
  return new UserError(
    'task_locked',
    `Task ${taskId} is already being worked on by agent-runner ${holder.command} (pid ${holder.pid}, ${where}, since ${holder.startedAt}). ` +
      `Wait for it to finish, stop it with \`kill -INT ${holder.pid}\`, or see \`agent-runner status\`. ` +
      (liveness === 'unknown'
        ? `If that process is gone, delete ${file} and run again.`
        : 'Use another --task-id to start a separate task.'),
    { details: { holder, file } },
  );
}

/**
 * Takes the task's lock or throws UserError('task_locked', exit 2) naming the holder. A lock whose holder is
 * dead on this host is taken over; the takeover itself is serialised by a second O_EXCL file so two runners
 * that find the same stale lock cannot both win.
 */
export function acquireTaskLock(runDir: string, options: AcquireTaskLockOptions): TaskLock {
  mkdirSync(runDir, { recursive: true });
  const file = path.join(runDir, LOCK_FILE);
  const localHostname = options.hostname ?? osHostname();
  const holder: LockHolder = {
    pid: options.pid ?? process.pid,
    hostname: localHostname,
    startedAt: (options.now?.() ?? new Date()).toISOString(),
    command: options.command,
    taskId: options.taskId,
  };
  const made = (tookOver: LockHolder | null): TaskLock => ({
    file,
    holder,
    tookOver,
    release: () => {
      const current = readTaskLock(runDir);
      if (current && current.pid === holder.pid && current.hostname === holder.hostname)
        rmSync(file, { force: true });
    },
  });

  if (tryCreate(file, holder)) return made(null);
  const existing = readTaskLock(runDir);
  if (existing === null) {
    // Unreadable: a lock being written this very moment, or the torn remains of a crash.
    if (ageMs(file) < FRESH_LOCK_MS) {
      throw new UserError(
        'task_locked',
        `Task ${options.taskId} is being started by another agent-runner right now (${file}). Wait a moment and see \`agent-runner status\`.`,
      );
    }
  } else {
    const liveness = livenessOf(existing, localHostname);
    if (liveness !== 'dead') throw lockedError(options.taskId, file, existing, liveness);
  }

  const takeover = `${file}.takeover`;
  if (ageMs(takeover) > STALE_TAKEOVER_MS) rmSync(takeover, { force: true });
  if (!tryCreate(takeover, holder)) {
    throw new UserError(
      'task_locked',
      `Another agent-runner is taking over the stale lock of task ${options.taskId} right now. See \`agent-runner status\`.`,
    );
  }
  try {
    // Re-read under the takeover marker: the lock may have changed hands since we looked.
    const again = readTaskLock(runDir);
    if (again !== null && livenessOf(again, localHostname) !== 'dead')
      throw lockedError(options.taskId, file, again, livenessOf(again, localHostname));
    rmSync(file, { force: true });
    if (!tryCreate(file, holder)) {
      const winner = readTaskLock(runDir);
      throw winner
        ? lockedError(options.taskId, file, winner, livenessOf(winner, localHostname))
        : new UserError('task_locked', `Could not take the lock of task ${options.taskId} (${file}).`);
    }
    return made(existing);
  } finally {
    rmSync(takeover, { force: true });
  }
}
