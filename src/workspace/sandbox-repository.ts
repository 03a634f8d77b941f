/**
 * The sandbox repository: a fresh repository at `.agent-runner/sandboxes/<TASK-ID>/repo`, mounted into the
 * container, whose history starts at the snapshot. After the worker has run, its `.git` is worker-controlled
 * data: the host only ever reads its task branch back with `git fetch` (see sync-back.ts).
 */
import { lstat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { AgentRunnerError } from '../errors.js';
import { git } from './git-command.js';

/** The identity the worker commits with (set in the sandbox repository's config). */
export const WORKER_IDENTITY = { name: 'agent-runner worker', email: 'worker@agent-runner.invalid' };

/**
 * Creates the sandbox repository and checks out `branch` at the snapshot. Only the snapshot ref is fetched;
 * it has no parent, so only the objects of the filtered tree arrive.
 */
export async function createSandboxRepository(options: {
  repoRoot: string;
  sandboxRepoPath: string;
  snapshotRef: string;
  snapshotSha: string;
  branch: string;
}): Promise<void> {
  const { sandboxRepoPath } = options;
  await mkdir(sandboxRepoPath, { recursive: true });
  const cwd = sandboxRepoPath;
  await git(['init', '-q', `--initial-branch=${options.branch}`], { cwd });
  await git(
    [
      'fetch',
      '-q',
      '--no-tags',
      '--no-write-fetch-head',
      options.repoRoot,
      `${options.snapshotRef}:refs/agent-runner/snapshot`,
    ],
    {
      cwd,
    },
  );
  const fetched = (await git(['rev-parse', 'refs/agent-runner/snapshot'], { cwd })).trim();
  if (fetched !== options.snapshotSha) {
    throw new AgentRunnerError(
      'workspace_failed',
      `The sandbox repository received ${fetched} instead of the snapshot ${options.snapshotSha}; remove ${sandboxRepoPath} and run again.`,
    );
  }
  // Hooks off for the one checkout the host does here; the worker's hooks later run only inside the sandbox.
  await git(['-c', 'core.hooksPath=/dev/null', 'checkout', '-q', '-B', options.branch, options.snapshotSha], {
    cwd,
  });
  await git(['config', 'user.name', WORKER_IDENTITY.name], { cwd });
  await git(['config', 'user.email', WORKER_IDENTITY.email], { cwd });
}

/**
 * The sandbox repository's git directory, when it is safe for host git to read: a real directory (not a
 * symlink or a `gitdir:` file), no `commondir` and no alternates (either would make host upload-pack read
 * another repository on the host), HEAD and `objects` not symlinks. Returns the reason otherwise.
 */
export async function sandboxGitDir(
  sandboxRepoPath: string,
): Promise<{ gitDir: string; problem: null } | { gitDir: null; problem: string }> {
  const gitDir = path.join(sandboxRepoPath, '.git');
  const kind = async (relative: string): Promise<'dir' | 'file' | 'other' | 'absent'> => {
    try {
      const stats = await lstat(path.join(gitDir, relative));
      return stats.isDirectory() ? 'dir' : stats.isFile() ? 'file' : 'other';
    } catch {
      return 'absent';
    }
  };
  const refuse = (reason: string) => ({ gitDir: null, problem: `refusing to read ${gitDir}: ${reason}` });
  if ((await kind('.')) !== 'dir') return refuse('it is missing or not a directory');
  if ((await kind('HEAD')) !== 'file') return refuse('HEAD is not a regular file');
  if ((await kind('objects')) !== 'dir') return refuse('objects is not a directory');
  if (!['dir', 'absent'].includes(await kind('objects/info')))
    return refuse('objects/info is not a directory');
  for (const planted of ['commondir', 'objects/info/alternates', 'objects/info/http-alternates']) {
    if ((await kind(planted)) !== 'absent') return refuse(`${planted} points git at other repositories`);
  }
  return { gitDir, problem: null };
}
