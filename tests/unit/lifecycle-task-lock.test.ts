import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { UserError } from '../../src/errors.js';
import { isLocalProcessAlive } from '../../src/lifecycle/process-liveness.js';
import { acquireTaskLock, readTaskLock } from '../../src/lifecycle/task-lock.js';

function runDir(): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'ar-lock-'));
  onTestFinished(() => rmSync(directory, { recursive: true, force: true }));
  return path.join(directory, 'runs', 'T-1');
}

/** The pid of a process that has exited (and been reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  const pid = Number(child.stdout);
  expect(isLocalProcessAlive(pid)).toBe(false);
  return pid;
}

function refusal(action: () => unknown): UserError {
  try {
    action();
  } catch (error) {
    if (error instanceof UserError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('task lock', () => {
  it('holds pid, hostname and start time, and refuses a second holder naming the first (exit 2)', () => {
    const dir = runDir();
    const lock = acquireTaskLock(dir, { taskId: 'T-1', command: 'run' });
    expect(readTaskLock(dir)).toMatchObject({ pid: process.pid, hostname: hostname(), command: 'run' });
    expect(lock.tookOver).toBeNull();
    const error = refusal(() => acquireTaskLock(dir, { taskId: 'T-1', command: 'resume', pid: 4242 }));
    expect(error.code).toBe('task_locked');
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain(`agent-runner run (pid ${process.pid}, on this machine`);
    lock.release();
    expect(existsSync(path.join(dir, 'lock'))).toBe(false);
  });

  it('takes over the lock of a dead process', () => {
    const dir = runDir();
    const pid = deadPid();
    acquireTaskLock(dir, { taskId: 'T-1', command: 'run', pid });
    const lock = acquireTaskLock(dir, { taskId: 'T-1', command: 'resume' });
    expect(lock.tookOver?.pid).toBe(pid);
    expect(readTaskLock(dir)?.pid).toBe(process.pid);
    expect(existsSync(path.join(dir, 'lock.takeover'))).toBe(false);
  });

  it('never takes over a lock from another host', () => {
    const dir = runDir();
    acquireTaskLock(dir, { taskId: 'T-1', command: 'run', pid: deadPid(), hostname: 'elsewhere' });
    const error = refusal(() => acquireTaskLock(dir, { taskId: 'T-1', command: 'run' }));
    expect(error.message).toMatch(/on another machine \(elsewhere\).*delete .*lock/);
  });

  it('refuses an unreadable lock being written now, takes over an old unreadable one', () => {
    const dir = runDir();
    acquireTaskLock(dir, { taskId: 'T-1', command: 'run' }).release();
    const file = path.join(dir, 'lock');
    writeFileSync(file, '');
    expect(refusal(() => acquireTaskLock(dir, { taskId: 'T-1', command: 'run' })).code).toBe('task_locked');
    const old = new Date(Date.now() - 60_000);
    utimesSync(file, old, old);
    acquireTaskLock(dir, { taskId: 'T-1', command: 'run' });
    expect(JSON.parse(readFileSync(file, 'utf8')).pid).toBe(process.pid);
  });

  it('release leaves a lock that another process holds', () => {
    const dir = runDir();
    const mine = acquireTaskLock(dir, { taskId: 'T-1', command: 'run', pid: deadPid() });
    // Taken over by someone else meanwhile.
    acquireTaskLock(dir, { taskId: 'T-1', command: 'run' });
    mine.release();
    expect(readTaskLock(dir)?.pid).toBe(process.pid);
  });
});
