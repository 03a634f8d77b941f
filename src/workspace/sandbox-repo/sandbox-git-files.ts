/**
 * What host git reads of the sandbox repository when it fetches from it, checked before it does. Everything in
 * that `.git` is the worker's: a symlink there would make host git read a host file or repository, a FIFO or a
 * device would block it (upload-pack opens `packed-refs`, `config`, `shallow`, refs and pack files as plain
 * files and waits), and an `include` in its config would make it read any path the worker names. No worker
 * process is alive while the host fetches (they are all ended after each run), so nothing can swap an entry
 * between this check and the fetch.
 */
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * Every entry of the sandbox's git directory that upload-pack may open: its config (and the per-worktree one),
 * HEAD, the refs in all their forms, the shallow and graft lists (`info/grafts`), and the object store (loose
 * objects, packs and their indexes, commit-graphs, multi-pack-index, `objects/info/*`).
 */
export const FETCHED_GIT_ENTRIES: readonly string[] = [
  'config',
  'config.worktree',
  'HEAD',
  'packed-refs',
  'refs',
  'reftable',
  'shallow',
  'info',
  'objects',
];

/** The config files of the git directory whose content is checked, and how large one may be. */
const CONFIG_FILES: readonly string[] = ['config', 'config.worktree'];
export const MAX_SANDBOX_CONFIG_BYTES = 1024 * 1024;
/** Any spelling of `include.path` and `includeIf.<condition>.path` holds this (git compares sections caseless). */
const INCLUDE = /include/i;

/**
 * The first entry under `gitDir`'s `names` (walked with lstat, never following a link) that is neither a
 * directory nor a regular file, with what it is; null when there is none. Absent entries are fine.
 */
export async function specialEntryIn(
  gitDir: string,
  names: readonly string[],
): Promise<{ entry: string; kind: string } | null> {
  const visit = async (relative: string): Promise<{ entry: string; kind: string } | null> => {
    const stats = await lstat(path.join(gitDir, relative)).catch(() => null);
    if (stats === null || stats.isFile()) return null;
    if (!stats.isDirectory()) return { entry: relative, kind: entryKind(stats) };
    for (const name of await readdir(path.join(gitDir, relative))) {
      const found = await visit(path.join(relative, name));
      if (found !== null) return found;
    }
    return null;
  };
  for (const name of names) {
    const found = await visit(name);
    if (found !== null) return found;
  }
  return null;
}

/** What a non-regular, non-directory entry is, in words. */
function entryKind(stats: Stats): string {
  if (stats.isSymbolicLink()) return 'a symlink';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isBlockDevice() || stats.isCharacterDevice()) return 'a device';
  return 'a special file';
}

/**
 * Why the git directory's config must not be read by host git, or null: a config file that includes other
 * files (any path on the host, a FIFO among them), or one too large to be the sandbox's. Read through a
 * descriptor opened without following a link or waiting on a FIFO, checked to be a regular file first.
 */
export async function configProblem(gitDir: string): Promise<string | null> {
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;
  for (const name of CONFIG_FILES) {
    const handle = await open(path.join(gitDir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(() => null);
    if (handle === null) continue;
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) return `${name} is not a regular file`;
      if (stats.size > MAX_SANDBOX_CONFIG_BYTES)
        return `${name} is larger than ${MAX_SANDBOX_CONFIG_BYTES} bytes`;
      const text = (await handle.readFile()).toString('latin1');
      if (INCLUDE.test(text)) return `${name} includes other configuration files`;
    } finally {
      await handle.close();
    }
  }
  return null;
}

/**
 * Why host git must not read the sandbox's git directory, or null: an entry it reads that is not a regular
 * file or a directory, or a config that includes other files.
 */
export async function sandboxReadProblem(gitDir: string): Promise<string | null> {
  const special = await specialEntryIn(gitDir, FETCHED_GIT_ENTRIES);
  if (special !== null)
    return `${withoutControls(special.entry)} is a symlink or a special file (${special.kind})`;
  return configProblem(gitDir);
}

/** A worker-chosen name as it may be printed: control characters (terminal escapes) become `?`. */
export function withoutControls(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}
