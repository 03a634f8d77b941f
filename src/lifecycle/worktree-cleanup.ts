/**
 * `gc` for a finished task's files: its worktree goes only when it holds no uncommitted changes and no commit
 * that lives nowhere else (no other branch, no remote-tracking branch); `force` overrides. The task branch is
 * never deleted, so a removed worktree never takes a commit with it. The sandbox repository goes with the
 * worktree when the last observation found it clean (the runner never runs git inside it on the host).
 */
import { rm } from 'node:fs/promises';
import { tryGit } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import type { OwnershipApplier } from '../workspace/scope/permissions.js';
import { removeTaskSandbox } from '../workspace/sandbox-repo/remove-task-sandbox.js';
import type { TaskEntry } from './task-inventory.js';

export interface WorktreeVerdict {
  taskId: string;
  /** Reasons to keep it (empty: safe to remove). */
  keep: string[];
  removed: boolean;
  error: string | null;
  /** A reason `--force` does not lift (the task's container still exists). */
  blocked?: string;
}

/** Why a finished task's worktree must stay (empty when nothing would be lost). */
export async function reasonsToKeep(repoRoot: string, task: TaskEntry): Promise<string[]> {
  const layout = taskLayout(repoRoot, task.taskId);
  const reasons: string[] = [];
  if (task.worktreePath) {
    const status = await tryGit(['status', '--porcelain', '--untracked-files=normal'], {
      cwd: task.worktreePath,
    });
    if (status.exitCode !== 0) reasons.push(`git status failed in ${task.worktreePath}`);
    else if (status.stdout.trim()) {
      const count = status.stdout.trim().split('\n').length;
      reasons.push(`${count} uncommitted change(s) in ${task.worktreePath}`);
    }
  }
  const unpushed = await tryGit(
    [
      'rev-list',
      '--count',
      layout.branchRef,
      '--not',
      `--exclude=${layout.branch}`,
      '--branches',
      '--remotes',
    ],
    { cwd: repoRoot },
  );
  const count = Number(unpushed.stdout.trim());
  if (unpushed.exitCode === 0 && count > 0)
    reasons.push(
      `${count} commit(s) on ${layout.branch} that are on no other branch or remote (push or merge them)`,
    );
  const lastFacts = [...(task.journal?.runs ?? [])].reverse().find((run) => run.facts)?.facts;
  if (task.sandboxRepoPath && (lastFacts?.dirty ?? false))
    reasons.push(
      `the sandbox repository ${task.sandboxRepoPath} held uncommitted worker files at the last observation`,
    );
  return reasons;
}

/**
 * Removes a finished task's worktree and sandbox repository unless something would be lost (or `force`).
 * Never while a container of the task exists (one kept with --keep-sandbox): a process in it could swap a
 * directory of the sandbox repository for a symlink while the recursive delete walks it, and lead the delete
 * out of the repository. `--force` does not lift that; removing the container does.
 */
export async function cleanFinishedTask(
  repoRoot: string,
  task: TaskEntry,
  options: {
    force: boolean;
    dryRun: boolean;
    applier?: OwnershipApplier;
    /** Names of the task's containers that still exist (running or not). */
    containersOf?: (taskId: string) => Promise<string[]>;
  },
): Promise<WorktreeVerdict> {
  const containers = task.sandboxRepoPath ? ((await options.containersOf?.(task.taskId)) ?? []) : [];
  if (containers.length > 0) {
    const names = containers.join(' ');
    return {
      taskId: task.taskId,
      keep: [],
      removed: false,
      error: null,
      blocked: `its container still exists (remove it first: docker rm -f ${names})`,
    };
  }
  const keep = await reasonsToKeep(repoRoot, task);
  const verdict: WorktreeVerdict = { taskId: task.taskId, keep, removed: false, error: null };
  if ((keep.length > 0 && !options.force) || options.dryRun) return verdict;
  const layout = taskLayout(repoRoot, task.taskId);
  if (task.worktreePath) {
    const removed = await tryGit(
      ['worktree', 'remove', ...(options.force ? ['--force', '--force'] : []), task.worktreePath],
      { cwd: repoRoot },
    );
    if (removed.exitCode !== 0) {
      verdict.error = removed.stderr.trim();
      return verdict;
    }
  }
  if (task.sandboxRepoPath) {
    await removeTaskSandbox(repoRoot, task.taskId, options.applier ? { applier: options.applier } : {});
  }
  await rm(`${layout.runDir}/lock`, { force: true });
  verdict.removed = true;
  return verdict;
}
