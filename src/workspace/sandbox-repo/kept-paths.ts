/**
 * What the replay of the worker's commits keeps from the base, whatever the worker committed: the excluded
 * paths (absent from the sandbox) and the runner's own `.agent-runner/` (present, never the worker's to change).
 */
import type { ScopeMatcher } from '../scope/scope.js';
import { listTree, type TreeEntry } from '../git/tree-entries.js';

/** The entries of `commit` whose version the replay keeps. */
export async function keptEntriesOf(
  repoRoot: string,
  commit: string,
  scope: ScopeMatcher,
): Promise<TreeEntry[]> {
  return (await listTree(repoRoot, commit)).filter((entry) => scope.keepsBase(entry.path));
}

/**
 * The kept paths a worker's tree touched: added or changed against the base, or deleted from it where the
 * sandbox held the base's version (an excluded path is absent from the sandbox: its absence is no change).
 */
export function keptPathsTouched(
  workerKept: readonly TreeEntry[],
  baseKept: readonly TreeEntry[],
  scope: ScopeMatcher,
): string[] {
  const baseVersion = new Map(baseKept.map((entry) => [entry.path, `${entry.mode} ${entry.sha}`]));
  const inWorkerTree = new Set(workerKept.map((entry) => entry.path));
  return [
    ...workerKept
      .filter((entry) => baseVersion.get(entry.path) !== `${entry.mode} ${entry.sha}`)
      .map((entry) => entry.path),
    ...baseKept
      .filter((entry) => !inWorkerTree.has(entry.path) && !scope.isExcluded(entry.path))
      .map((entry) => entry.path),
  ];
}
