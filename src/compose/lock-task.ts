/**
 * One task, one runner: taking a task's lock, apart from the composition, so that a caller can hold the lock
 * (and plan) before the composition's modules are loaded.
 */
import { mkdir } from 'node:fs/promises';
import { acquireTaskLock, type TaskLock } from '../lifecycle/task-lock.js';
import { taskLayout } from '../workspace/layout.js';
import type { TaskHooks, TaskSpec } from './task-spec.js';

/** The lock of `spec.taskId` (refused, exit 2, while another live process works on it), with a notice when it took over a dead runner's. */
export async function lockTask(
  spec: Pick<TaskSpec, 'repoRoot' | 'taskId'>,
  hooks: Pick<TaskHooks, 'onNotice'>,
  command: string,
): Promise<TaskLock> {
  const layout = taskLayout(spec.repoRoot, spec.taskId);
  await mkdir(layout.runDir, { recursive: true });
  const lock = acquireTaskLock(layout.runDir, { taskId: spec.taskId, command });
  if (lock.tookOver) {
    hooks.onNotice?.(
      `took over the lock of task ${spec.taskId} left by pid ${lock.tookOver.pid} (${lock.tookOver.command}, started ${lock.tookOver.startedAt}), which is no longer running`,
    );
  }
  return lock;
}
