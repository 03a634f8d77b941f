/**
 * Reading and building git trees in the user's repository with a temporary index, so neither the user's
 * index nor their working tree is touched.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { git, splitNul, tryGit } from './git-command.js';

/** One blob, symlink or submodule entry of a tree (recursive listing). */
export interface TreeEntry {
  mode: string;
  type: string;
  sha: string;
  path: string;
}

/** Every non-tree entry of `treeish`, recursively. */
export async function listTree(repoRoot: string, treeish: string): Promise<TreeEntry[]> {
  const output = await git(['ls-tree', '-r', '-z', '--full-tree', treeish], { cwd: repoRoot });
  return splitNul(output).map((line) => {
    const tab = line.indexOf('\t');
    const [mode = '', type = '', sha = ''] = line.slice(0, tab).split(' ');
    return { mode, type, sha, path: line.slice(tab + 1) };
  });
}

/** Index lines for `update-index -z --index-info`: add an entry, or remove a path (mode 0). */
export type IndexEdit = { kind: 'add'; entry: TreeEntry } | { kind: 'remove'; path: string };

const ZERO_SHA = '0000000000000000000000000000000000000000';

/**
 * Builds a tree: `baseTree` read into a temporary index, the edits applied (`--replace` so that a file and
 * a directory of the same name resolve in favour of the edit), then written. Returns the new tree id.
 */
export async function buildTree(
  repoRoot: string,
  baseTree: string,
  edits: readonly IndexEdit[],
): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'agent-runner-index-'));
  const env = { GIT_INDEX_FILE: path.join(dir, 'index') };
  try {
    await git(['read-tree', baseTree], { cwd: repoRoot, env });
    if (edits.length > 0) {
      const input = edits
        .map((edit) =>
          edit.kind === 'add'
            ? `${edit.entry.mode} ${edit.entry.sha}\t${edit.entry.path}\0`
            : `0 ${ZERO_SHA}\t${edit.path}\0`,
        )
        .join('');
      await git(['update-index', '-z', '--replace', '--index-info'], { cwd: repoRoot, env, input });
    }
    return (await git(['write-tree'], { cwd: repoRoot, env })).trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `git rev-parse --verify` of a commit, or null when it does not resolve. */
export async function resolveCommit(repoRoot: string, revision: string): Promise<string | null> {
  const result = await tryGit(['rev-parse', '--verify', '--quiet', `${revision}^{commit}`], {
    cwd: repoRoot,
  });
  return result.exitCode === 0 ? result.stdout.trim() : null;
}
