/**
 * The sandbox repository: a fresh repository at `.agent-runner/sandboxes/<TASK-ID>/repo`, mounted into the
 * container, whose history starts at the snapshot. After the worker has run, its `.git` is worker-controlled
 * data: the host only ever reads its task branch back with `git fetch` (see sync-back.ts).
 */
import { lstat, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AgentRunnerError } from '../../errors.js';
import { git, tryGit } from '../git/git-command.js';

/** The identity the worker commits with (set in the sandbox repository's config). */
export const WORKER_IDENTITY = { name: 'agent-runner worker', email: 'worker@agent-runner.invalid' };

/**
 * Starts the sandbox repository: an empty repository on `branch` with the worker's identity, borrowing the
 * person's object store for the checkout (`objects/info/alternates`) until `fillSandboxRepository` has
 * packed the snapshot's own objects into it and removed the borrowing. Needs nothing of the snapshot, so it
 * runs while the snapshot is made.
 */
export async function initSandboxRepository(options: {
  /** The person's object store (`<git dir>/objects`). */
  objectsDir: string;
  sandboxRepoPath: string;
  branch: string;
}): Promise<void> {
  const cwd = options.sandboxRepoPath;
  await mkdir(cwd, { recursive: true });
  await git(['init', '-q', `--initial-branch=${options.branch}`], { cwd });
  // One `git config` at a time: each takes the config file's lock.
  const identity = async () => {
    await git(['config', 'user.name', WORKER_IDENTITY.name], { cwd });
    await git(['config', 'user.email', WORKER_IDENTITY.email], { cwd });
  };
  await Promise.all([
    identity(),
    writeFile(path.join(cwd, '.git', 'objects', 'info', 'alternates'), `${options.objectsDir}\n`, {
      flag: 'wx',
    }),
  ]);
}

/**
 * Fills the initialised sandbox repository and checks out `branch` at the snapshot, both at once: the
 * checkout reads the snapshot's objects from the person's object store (borrowed by `initSandboxRepository`)
 * while the host's `pack-objects` writes the same objects, and only those, as one pack straight into the new
 * repository, index included: no delta search (`--window=0`, existing deltas between packed objects are
 * reused), no second hashing pass (`index-pack`), nothing sent over a transport. Then the borrowing is
 * removed, before anything runs in the sandbox: the repository holds only what is reachable from the
 * parentless snapshot (the filtered tree). The checkout uses git's parallel workers; like every host git
 * call it runs no filter or hook (git-command.ts), so the sandbox gets what is committed (LFS pointers too).
 */
export async function fillSandboxRepository(options: {
  repoRoot: string;
  sandboxRepoPath: string;
  snapshotSha: string;
  branch: string;
}): Promise<void> {
  const { sandboxRepoPath } = options;
  const cwd = sandboxRepoPath;
  // On a file system of its own (a hard disk cap), pack-objects runs in the sandbox repository, reading the
  // person's objects through the borrowing: it writes its temporary pack beside the objects of the repository
  // it runs in, and a rename cannot cross file systems. Nothing has run in the new repository yet.
  const packIn =
    (await stat(options.repoRoot)).dev === (await stat(sandboxRepoPath)).dev ? options.repoRoot : cwd;
  await Promise.all([
    // Host git in the user's repository (trusted), writing into the fresh sandbox repository the host just
    // made: no worker has touched it yet. `--revs` with only the parentless snapshot: its commit, its trees
    // and their blobs, and never a thin pack, so no delta can refer to an object that is not in the sandbox.
    git(
      [
        'pack-objects',
        '-q',
        '--revs',
        '--window=0',
        '--depth=0',
        path.join(sandboxRepoPath, '.git', 'objects', 'pack', 'pack'),
      ],
      { cwd: packIn, input: `${options.snapshotSha}\n` },
    ),
    // The person's own tree, before any worker ran: hooks and filters stay off (git-command), links stay links.
    git(['checkout', '-q', '-B', options.branch, options.snapshotSha], {
      cwd,
      config: { 'checkout.workers': '0' },
      keepSymlinks: true,
    }),
  ]);
  await rm(path.join(sandboxRepoPath, '.git', 'objects', 'info', 'alternates'));
  await git(['update-ref', 'refs/agent-runner/snapshot', options.snapshotSha], { cwd });
  // On its own objects now: the snapshot must be there.
  const fetched = await tryGit(['rev-parse', '--verify', '--quiet', `${options.snapshotSha}^{tree}`], {
    cwd,
  });
  if (fetched.exitCode !== 0) {
    throw new AgentRunnerError(
      'workspace_failed',
      `The sandbox repository did not receive the snapshot ${options.snapshotSha}; remove ${sandboxRepoPath} and run again.`,
    );
  }
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
