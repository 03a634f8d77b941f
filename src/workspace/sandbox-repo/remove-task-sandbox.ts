/**
 * Removing a task's sandbox repository. Its files belong to the worker and guard uids, so the person may
 * not be able to delete them without root; the runner can. The task branch, the worktree and the run data
 * stay: they are the person's. The recursive delete removes links, never what they point to; it runs only
 * once no container mounts the directory, so nothing swaps a directory for a link while it walks.
 */
import { rm } from 'node:fs/promises';
import { AgentRunnerError } from '../../errors.js';
import { capVolumesUnder, removeCapVolume } from '../../sandbox/cap-volume.js';
import { tryGit } from '../git/git-command.js';
import { taskLayout } from '../layout.js';
import { giveBackPlan, type OwnershipApplier } from '../scope/permissions.js';

/**
 * Deletes `.agent-runner/sandboxes/<TASK-ID>` and the runner's snapshot/sandbox refs. Uncommitted files in the
 * sandbox are lost: call `syncBack` first and look at `WorkspaceObservation.dirty`. The next prepare makes a new sandbox
 * from the task branch's head.
 */
export async function removeTaskSandbox(
  repoRoot: string,
  taskId: string,
  options: { applier?: OwnershipApplier } = {},
): Promise<void> {
  const layout = taskLayout(repoRoot, taskId);
  // A capped file system (still mounted after a crash) goes first, image and all: the walk below never
  // enters a mount, and the image is the sandbox repository's files.
  for (const mounted of await capVolumesUnder(layout.sandboxDir)) await removeCapVolume(mounted);
  try {
    await rm(layout.sandboxDir, { recursive: true, force: true });
  } catch (error) {
    // Not root: files of the guard uid in its sticky directories cannot be deleted (node reports EPERM,
    // EACCES or, from its recursive walk, ENOTDIR). Give them back to this user, then delete.
    if (!options.applier) throw error;
    // No container mounts it any more (the callers remove or stop it first); the pass follows no link.
    const me = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const report = await options.applier(layout.sandboxDir, await giveBackPlan(layout.sandboxDir, me));
    const stuck = report.skipped.find((step) => step.reason !== 'gone');
    if (stuck)
      throw new AgentRunnerError(
        'workspace_failed',
        `Could not give ${JSON.stringify(stuck.path)} in ${layout.sandboxDir} back to be deleted (${stuck.reason}${stuck.detail ? `: ${stuck.detail}` : ''}). ` +
          'A process outside agent-runner may still be writing there (`docker ps --filter label=agent-runner.task`): stop it and run `agent-runner gc` again.',
      );
    await rm(layout.sandboxDir, { recursive: true, force: true });
  }
  for (const ref of [layout.snapshotRef, layout.sandboxRef]) {
    await tryGit(['update-ref', '-d', ref], { cwd: repoRoot });
  }
}
