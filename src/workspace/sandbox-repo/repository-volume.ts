/**
 * The sandbox repository's directory: whether an earlier run's is reused, and its hard disk cap
 * (src/sandbox/cap-volume.ts), a file system sized for the files it starts with plus `sandbox.disk.repository`,
 * so the cap stays what the worker may add, as the watched cap measures it.
 */
import { existsSync } from 'node:fs';
import type { DiskCapKind } from '../../core/records.js';
import { capImagePath, mountCapVolume } from '../../sandbox/cap-volume.js';
import { UserError } from '../../errors.js';
import { splitNul, tryGit } from '../git/git-command.js';
import type { TaskLayout } from '../layout.js';
import type { PrepareTaskWorkspaceOptions } from '../prepare-task-workspace.js';
import { sandboxGitDir } from './sandbox-repository.js';
import type { WorkspaceState } from '../workspace-state.js';

/**
 * What the sandbox repository of `sha` takes at most before the worker runs: every blob checked out (in 4 KiB
 * blocks) and again in its pack (never larger than the blobs), the index, and a MiB of git's own files.
 */
async function startingSize(repoRoot: string, sha: string): Promise<{ bytes: number; files: number }> {
  const listing = await tryGit(['ls-tree', '-r', '-l', '-z', '--full-tree', sha], { cwd: repoRoot });
  let bytes = 1024 ** 2;
  let files = 0;
  for (const entry of splitNul(listing.stdout)) {
    const size = Number(entry.split('\t')[0]?.trim().split(/\s+/)[3]);
    files += 1;
    if (!Number.isFinite(size)) continue;
    bytes += Math.ceil(size / 4096) * 4096 + size + 256;
  }
  return { bytes, files };
}

/**
 * Mounts the sandbox repository's capped file system: the one an earlier run made (whatever the config says
 * now: its files are there), or, for a new sandbox repository under a hard cap, a new one.
 */
export async function mountRepositoryVolume(
  layout: TaskLayout,
  options: PrepareTaskWorkspaceOptions,
  made: { sha: string } | null,
): Promise<DiskCapKind | undefined> {
  const cap = options.diskCap;
  const request = {
    mountPath: layout.sandboxRepoPath,
    capBytes: cap?.capBytes ?? 0,
    owner: { uid: 0, gid: 0 },
  };
  if (!made) {
    if (!existsSync(capImagePath(layout.sandboxRepoPath))) return undefined;
    return mountCapVolume({ ...request, startBytes: 0, startFiles: 0 });
  }
  if (!cap) return undefined;
  if (!cap.hard)
    return {
      kind: 'watched',
      reason: cap.watchedReason ?? 'sandbox.disk.hard is false in the configuration',
    };
  const start = await startingSize(options.repoRoot, made.sha);
  // The runner's, as a plain directory made by it: host git refuses a repository another user owns, and the
  // permissions pass gives the worker what it may write.
  const runner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  return mountCapVolume({
    ...request,
    owner: runner,
    startBytes: start.bytes,
    startFiles: start.files,
  });
}

/**
 * Whether the sandbox repository of an earlier run is reused. Refuses one made under other exclude rules, and a
 * directory there that this runner does not know.
 */
export async function sandboxReusable(
  layout: TaskLayout,
  previous: WorkspaceState | null,
  options: PrepareTaskWorkspaceOptions,
): Promise<boolean> {
  const sandboxExists = existsSync(layout.sandboxRepoPath);
  const reusable =
    sandboxExists && previous !== null && (await sandboxGitDir(layout.sandboxRepoPath)).gitDir !== null;
  if (reusable) {
    if (JSON.stringify([...previous.exclude].sort()) !== JSON.stringify([...options.scope.exclude].sort())) {
      throw new UserError(
        'config_invalid',
        `The exclude rules changed since the sandbox of task ${options.taskId} was made, so it may still hold files that are excluded now. ` +
          `Its commits are already on ${layout.branch}; remove ${layout.sandboxDir} (uncommitted sandbox files are lost) and run again.`,
      );
    }
  } else if (sandboxExists) {
    throw new UserError(
      'repository_invalid',
      `${layout.sandboxRepoPath} exists but is not a sandbox this runner knows (no usable state in ${layout.runDir}). ` +
        'Look at it, move it away and run again.',
    );
  }
  return reusable;
}
