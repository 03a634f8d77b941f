/**
 * The person's worktree of a task branch on the host: whether it must be made (refusing, before anything is
 * created, what `git worktree add` would refuse) and making it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { UserError } from '../../errors.js';
import { git, splitNul, tryGit } from './git-command.js';
import type { TaskLayout } from '../layout.js';

/** Registered worktrees of the repository: their paths and the branch each has checked out. */
async function worktreeList(repoRoot: string): Promise<Array<{ path: string; branch: string | null }>> {
  const output = await git(['worktree', 'list', '--porcelain', '-z'], { cwd: repoRoot });
  const worktrees: Array<{ path: string; branch: string | null }> = [];
  for (const line of splitNul(output)) {
    if (line.startsWith('worktree ')) worktrees.push({ path: path.resolve(line.slice(9)), branch: null });
    else if (line.startsWith('branch ') && worktrees.length > 0) worktrees.at(-1)!.branch = line.slice(7);
  }
  return worktrees;
}

/**
 * Whether the person's worktree of the task branch must be made: false when it is there, true when it is
 * missing. Refuses, before anything is created, what `git worktree add` would refuse later.
 */
export async function worktreeNeeded(repoRoot: string, layout: TaskLayout): Promise<boolean> {
  const worktrees = await worktreeList(repoRoot);
  const target = path.resolve(layout.worktreePath);
  const registered = worktrees.some((worktree) => worktree.path === target);
  if (registered && existsSync(layout.worktreePath)) return false;
  if (!registered && existsSync(layout.worktreePath)) {
    throw new UserError(
      'repository_invalid',
      `${layout.worktreePath} exists but is not a git worktree of ${repoRoot}. Move it away (it may hold your edits) and run again.`,
    );
  }
  const elsewhere = worktrees.find(
    (worktree) =>
      worktree.branch === layout.branchRef && worktree.path !== target && existsSync(worktree.path),
  );
  if (elsewhere) {
    throw new UserError(
      'repository_invalid',
      `Could not create the worktree ${layout.worktreePath} for ${layout.branch}: it is checked out in ${elsewhere.path}. ` +
        `Switch that checkout to another branch and run again.`,
    );
  }
  return true;
}

/**
 * The person's worktree of the task branch, checked out with git's parallel workers. On a resume the branch
 * holds the worker's commits: git-command's settings keep every filter, hook and link of theirs inert.
 */
export async function addWorktree(repoRoot: string, layout: TaskLayout): Promise<void> {
  await git(['worktree', 'prune'], { cwd: repoRoot });
  const added = await tryGit(['worktree', 'add', '-q', layout.worktreePath, layout.branch], {
    cwd: repoRoot,
    config: { 'checkout.workers': '0' },
  });
  if (added.exitCode !== 0) {
    throw new UserError(
      'repository_invalid',
      `Could not create the worktree ${layout.worktreePath} for ${layout.branch}: ${added.stderr.trim()}. ` +
        `If the branch is checked out elsewhere, switch that checkout to another branch and run again.`,
    );
  }
}
