/**
 * The snapshot: a parentless commit holding a real commit's tree minus every excluded path. It is the only
 * thing the sandbox repository ever receives from the user's repository, so excluded content never enters
 * the sandbox, git objects included (unless identical bytes exist at a path that is not excluded).
 */
import { git } from '../git/git-command.js';
import type { ScopeMatcher } from '../scope/scope.js';
import { buildTree, listTree, type TreeEntry } from '../git/tree-entries.js';

export interface Snapshot {
  sha: string;
  /** The real commit it was made from. */
  of: string;
  /** Excluded entries of that commit, put back when the worker's commits are replayed. */
  excludedEntries: TreeEntry[];
}

/** The entries of `commit` matched by the exclude rules. */
export async function excludedEntriesOf(
  repoRoot: string,
  commit: string,
  scope: ScopeMatcher,
): Promise<TreeEntry[]> {
  return (await listTree(repoRoot, commit)).filter((entry) => scope.isExcluded(entry.path));
}

/**
 * Makes the snapshot commit of `commit` in the user's repository and points `ref` at it (a runner-owned ref,
 * so `git gc` keeps it). Deterministic: the same commit and rules give the same snapshot id.
 */
export async function createSnapshot(
  repoRoot: string,
  commit: string,
  scope: ScopeMatcher,
  ref: string,
): Promise<Snapshot> {
  const [excludedEntries, shown] = await Promise.all([
    excludedEntriesOf(repoRoot, commit, scope),
    git(['show', '-s', '--format=%T %ct', commit], { cwd: repoRoot }),
  ]);
  const [commitTree = '', seconds = ''] = shown.trim().split(' ');
  const date = `${seconds} +0000`;
  // Nothing excluded: the commit's own tree, with no index to build.
  const tree =
    excludedEntries.length === 0
      ? commitTree
      : await buildTree(
          repoRoot,
          commitTree,
          excludedEntries.map((entry) => ({ kind: 'remove', path: entry.path })),
        );
  const identity = {
    GIT_AUTHOR_NAME: 'agent-runner',
    GIT_AUTHOR_EMAIL: 'agent-runner@localhost',
    GIT_AUTHOR_DATE: date,
    GIT_COMMITTER_NAME: 'agent-runner',
    GIT_COMMITTER_EMAIL: 'agent-runner@localhost',
    GIT_COMMITTER_DATE: date,
  };
  const message =
    `agent-runner snapshot of ${commit}\n\n` +
    `The tree of ${commit} without the paths excluded from the sandbox (${excludedEntries.length} removed).\n`;
  const sha = (await git(['commit-tree', tree], { cwd: repoRoot, env: identity, input: message })).trim();
  await git(['update-ref', '-m', 'agent-runner: snapshot', ref, sha], { cwd: repoRoot });
  return { sha, of: commit, excludedEntries };
}
