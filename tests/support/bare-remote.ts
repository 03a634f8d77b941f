/**
 * A bare repository as a `file://` remote for tests of what agent-runner pushes (host git and agent-runner's
 * remote parsing both take the URL), and every object it holds as text: what a probe for a leak searches.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import { writeTaskStateCommit } from '../../src/deliver/task-state-commit.js';
import { taskStateRef } from '../../src/remote/remote-task-state.js';
import type { FinishedTask } from './finished-task.js';

/** `git ARGS` in `cwd`, its output trimmed. */
export function run(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).trim();
}

/** A directory removed when the test finishes. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A new bare repository, as its `file://` URL. */
export function bareRemote(prefix = 'ar-state-remote-'): string {
  const dir = tempDir(prefix);
  run(dir, 'init', '-q', '--bare');
  return `file://${dir}`;
}

/** Every object of the repository behind a `file://` URL, as text. */
export function allObjects(remote: string): string {
  return execFileSync('git', ['cat-file', '--batch-all-objects', '--batch'], {
    cwd: remote.replace(/^file:\/\//, ''),
    encoding: 'latin1',
    maxBuffer: 256 * 1024 * 1024,
  });
}

/** Pushes a finished task's branch and its state ref (`refs/agent-runner/tasks/<ID>`) to `remote`. */
export function pushTask(task: FinishedTask, remote: string, stateRef: string): void {
  run(
    task.repo.root,
    'push',
    '-q',
    remote,
    `${task.branch}:refs/heads/${task.branch}`,
    `+${stateRef}:${stateRef}`,
  );
}

/** A machine with only the remote: a clone with the remote's branches and task states, nothing else. */
export function freshClone(remote: string): string {
  const root = tempDir('ar-state-fresh-');
  run(root, 'init', '-q', '-b', 'main');
  run(root, 'remote', 'add', 'origin', remote);
  run(
    root,
    'fetch',
    '-q',
    'origin',
    '+refs/heads/*:refs/remotes/origin/*',
    '+refs/agent-runner/tasks/*:refs/agent-runner/tasks/*',
  );
  return root;
}

/** Commits a finished task's state (redacted by `redact`) and pushes it with the branch to a new bare remote. */
export async function publishTaskState(
  task: FinishedTask,
  taskId: string,
  redact: (text: string) => string,
): Promise<string> {
  await writeTaskStateCommit({ repoRoot: task.repo.root, taskId, runDir: task.runDir, redact });
  const remote = bareRemote();
  pushTask(task, remote, taskStateRef(taskId));
  return remote;
}
