/**
 * The bounds of the replay (`sandbox.replay.*`), checked on the host's own git objects after the fetch and
 * before anything is replayed, moved or checked out: a worker that makes thousands of commits in seconds, or a
 * small pack that expands into gigabytes, is refused as a whole instead of keeping the runner replaying past its
 * wall clock or filling the person's worktree.
 */
import type { ReplayCaps } from '../../config/schema.js';
import type { ReplayCap } from '../../core/types.js';
import { git } from '../git/git-command.js';

export type { ReplayCaps } from '../../config/schema.js';

/**
 * Sum of the blob sizes of `treeish`'s whole tree: what a checkout of it writes. Read with plumbing from the
 * object store (sizes come from the object headers; nothing is inflated or written); gitlinks count nothing.
 */
export async function treeBytes(repoRoot: string, treeish: string, signal?: AbortSignal): Promise<number> {
  const sizes = await git(['ls-tree', '-r', '--full-tree', '--format=%(objectsize)', treeish], {
    cwd: repoRoot,
    ...(signal ? { signal } : {}),
  });
  let total = 0;
  for (const line of sizes.split('\n')) {
    const size = Number(line);
    if (line !== '' && Number.isFinite(size)) total += size;
  }
  return total;
}

/**
 * The first bound the sandbox's head goes over, or null: the number of new commits first (it needs no object
 * read), then the size of the tree a checkout of the head would write.
 */
export async function replayCapOver(
  repoRoot: string,
  sandboxHead: string,
  newCommits: number,
  caps: ReplayCaps,
  signal?: AbortSignal,
): Promise<ReplayCap | null> {
  if (newCommits > caps.maxCommits) return { cap: 'max_commits', limit: caps.maxCommits, actual: newCommits };
  if (newCommits === 0) return null;
  const bytes = await treeBytes(repoRoot, sandboxHead, signal);
  return bytes > caps.maxTreeBytes
    ? { cap: 'max_tree_bytes', limit: caps.maxTreeBytes, actual: bytes }
    : null;
}
