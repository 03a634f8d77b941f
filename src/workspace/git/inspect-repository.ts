/**
 * Preconditions on the user's repository, checked before anything is created, with messages that say how
 * to fix what is wrong.
 */
import path from 'node:path';
import { UserError } from '../../errors.js';
import { tryGit } from './git-command.js';

export interface RepositoryInfo {
  /** Top level of the main working tree. */
  root: string;
  /** The repository's git directory (absolute; where its `objects` are). */
  gitCommonDir: string;
  headSha: string;
  /** Current branch name, or null on a detached HEAD. */
  branch: string | null;
  detached: boolean;
}

/**
 * Checks that `cwd` is inside a git working tree with at least one commit. A detached HEAD is allowed: its
 * commit is a well-defined base, and the task works on its own branch anyway.
 */
export async function inspectRepository(cwd: string): Promise<RepositoryInfo> {
  // One git for the three directories: every git started costs the runner a few milliseconds of its one
  // thread (a fork of its whole process), and `run` inspects the repository before its first request.
  const topLevel = await tryGit(
    ['rev-parse', '--show-toplevel', '--path-format=absolute', '--git-common-dir', '--git-dir'],
    { cwd },
  );
  if (topLevel.exitCode !== 0) {
    const bare = await tryGit(['rev-parse', '--is-bare-repository'], { cwd });
    if (bare.exitCode === 0 && bare.stdout.trim() === 'true') {
      throw new UserError(
        'repository_invalid',
        `${cwd} is a bare git repository; agent-runner needs a working tree. Clone it (\`git clone ${cwd} work\`) and run agent-runner in the clone.`,
      );
    }
    throw new UserError(
      'repository_invalid',
      `${cwd} is not inside a git repository. Run agent-runner from your project's repository, or create one with \`git init && git add -A && git commit -m "initial"\`.`,
    );
  }
  const [root = '', common, own] = topLevel.stdout.trim().split('\n');
  if (common !== undefined && own !== undefined && common !== own) {
    throw new UserError(
      'repository_invalid',
      `${root} is a linked worktree (its repository is ${common}). Run agent-runner from the main working tree of that repository.`,
    );
  }
  const [head, branch] = await Promise.all([
    tryGit(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd: root }),
    tryGit(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: root }),
  ]);
  if (head.exitCode !== 0) {
    throw new UserError(
      'repository_invalid',
      `The repository at ${root} has no commits yet, so there is no base for a task branch. Make a first commit (\`git add -A && git commit -m "initial"\`) and run again.`,
    );
  }
  const detached = branch.exitCode !== 0;
  return {
    root,
    gitCommonDir: common ?? path.join(root, '.git'),
    headSha: head.stdout.trim(),
    branch: detached ? null : branch.stdout.trim(),
    detached,
  };
}
