/**
 * Host-side reads and writes of files in a directory the worker can write (the task's CODEX_HOME). Everything
 * there is attacker data, names included: a file can be a symlink to a host file, a FIFO that blocks a reader,
 * a hardlink, or be swapped for one of those between a check and its use.
 *
 * So nothing here resolves a path the worker controls. The root directory is opened once with O_NOFOLLOW;
 * every entry below is opened relative to its parent's open descriptor (`/proc/self/fd/<fd>/<name>`, which
 * gives openat semantics: the kernel resolves the name inside the directory the descriptor holds, whatever
 * has been renamed since), again with O_NOFOLLOW, and the opened descriptor is checked with fstat (a regular
 * file with one link, within a size cap) before a byte is read or written. Reads and writes go through that
 * descriptor. Linux only (the runner's sandboxes are Linux containers; /proc is required).
 */
import { constants, type Dirent, type Stats } from 'node:fs';
import { open, readdir, unlink, type FileHandle } from 'node:fs/promises';

const { O_RDONLY, O_RDWR, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;

/** Size cap of a worker file the host reads (the last message) when the caller does not say. */
export const DEFAULT_WORKER_FILE_MAX_BYTES = 1024 * 1024;
/** Directories deeper than this are not walked (codex's own layout is 4 deep). */
const MAX_DEPTH = 16;

/** Why an entry was not touched (for tests and logs; the caller treats it as absent). */
export type RefusedReason = 'not_regular' | 'hardlinked' | 'too_large' | 'symlink_or_gone' | 'bad_name';

export interface WorkerFileOptions {
  maxBytes?: number;
  /** When set, the file must belong to this uid. */
  uid?: number;
}

function isPlainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\0');
}

/** The path of `name` inside the directory open at `directory`, resolved by the kernel through the descriptor. */
function inside(directory: FileHandle, name: string): string {
  return `${descriptorPath(directory)}/${name}`;
}

/** The directory itself, through its descriptor. */
function descriptorPath(directory: FileHandle): string {
  return `/proc/self/fd/${directory.fd}`;
}

/** Opens a directory without following a symlink at its last component; null when it is not one. */
export async function openWorkerDirectory(dir: string): Promise<FileHandle | null> {
  try {
    return await open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch {
    return null;
  }
}

/** Opens `name` in `directory` (no symlink, no FIFO wait) and checks the descriptor; null when refused. */
async function openRegular(
  directory: FileHandle,
  name: string,
  flags: number,
  options: WorkerFileOptions & { allowHardlinks?: boolean },
): Promise<{ handle: FileHandle; size: number; stats: Stats } | { handle: null; refused: RefusedReason }> {
  if (!isPlainName(name)) return { handle: null, refused: 'bad_name' };
  let handle: FileHandle;
  try {
    handle = await open(inside(directory, name), flags | O_NOFOLLOW | O_NONBLOCK);
  } catch {
    return { handle: null, refused: 'symlink_or_gone' };
  }
  const stats = await handle.stat();
  const refused: RefusedReason | null = !stats.isFile()
    ? 'not_regular'
    : stats.nlink !== 1 && !options.allowHardlinks
      ? 'hardlinked'
      : stats.size > (options.maxBytes ?? DEFAULT_WORKER_FILE_MAX_BYTES)
        ? 'too_large'
        : options.uid !== undefined && stats.uid !== options.uid
          ? 'not_regular'
          : null;
  if (refused !== null) {
    await handle.close();
    return { handle: null, refused };
  }
  return { handle, size: stats.size, stats };
}

/** Unlinks `name` and creates it anew (O_EXCL, no symlink) with `text` and the old file's owner and mode. */
async function replaceFile(directory: FileHandle, name: string, text: string, stats: Stats): Promise<void> {
  await unlink(inside(directory, name));
  const created = await open(
    inside(directory, name),
    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK,
    stats.mode & 0o777,
  );
  try {
    await created.write(text, 0, 'latin1');
    // The worker must still be able to use its own file (codex resumes from its session files).
    await created.chown(stats.uid, stats.gid).catch(() => undefined);
  } finally {
    await created.close();
  }
}

async function readAll(handle: FileHandle, size: number): Promise<Buffer> {
  // Read what fstat promised and nothing beyond: the file may grow, the cap holds.
  const buffer = Buffer.alloc(size);
  let offset = 0;
  while (offset < size) {
    const { bytesRead } = await handle.read(buffer, offset, size - offset, offset);
    if (bytesRead === 0) break;
    offset += bytesRead;
  }
  return buffer.subarray(0, offset);
}

/**
 * Reads `name` from the worker-writable directory `dir` and removes it. Null when it is absent, a symlink,
 * not a regular file, hardlinked or over the size cap (such an entry is removed too, without being followed).
 */
export async function takeWorkerFile(
  dir: string,
  name: string,
  options: WorkerFileOptions = {},
): Promise<string | null> {
  const directory = await openWorkerDirectory(dir);
  if (directory === null) return null;
  try {
    const opened = await openRegular(directory, name, O_RDONLY, options);
    let text: string | null = null;
    if (opened.handle !== null) {
      try {
        text = (await readAll(opened.handle, opened.size)).toString('utf8');
      } finally {
        await opened.handle.close();
      }
    }
    // unlink never follows the last component: a planted link goes, its target stays.
    if (isPlainName(name)) await unlink(inside(directory, name)).catch(() => undefined);
    return text;
  } finally {
    await directory.close();
  }
}

/** What a rewrite pass did. */
export interface RewriteReport {
  changed: number;
  refused: { path: string; reason: RefusedReason }[];
}

/**
 * Applies `transform` to one regular file `name` of `directory` (shown as `entryPath` in the report), writing
 * the result back when it differs; a refusal is added to `report`.
 */
async function rewriteFile(
  directory: FileHandle,
  name: string,
  entryPath: string,
  transform: (text: string) => string,
  limits: WorkerFileOptions,
  report: RewriteReport,
): Promise<void> {
  const opened = await openRegular(directory, name, O_RDWR, { ...limits, allowHardlinks: true });
  if (opened.handle === null) {
    report.refused.push({ path: entryPath, reason: opened.refused });
    return;
  }
  if (opened.stats.nlink === 0) {
    // Unlinked between open and fstat: nothing of the worker's state is left under that name.
    await opened.handle.close();
    return;
  }
  try {
    // latin1 maps every byte to one character and back, so binary files (codex's sqlite state) survive a
    // pass that changes nothing in them, and ASCII secrets are still found.
    const text = (await readAll(opened.handle, opened.size)).toString('latin1');
    const next = transform(text);
    if (next !== text) {
      if (opened.stats.nlink === 1) {
        await opened.handle.truncate(0);
        await opened.handle.write(next, 0, 'latin1');
      } else {
        // A hardlinked file is not written through (the other name could be a file the pass must not
        // touch): this name is replaced by a new file, created exclusively, so the link is broken.
        await replaceFile(directory, name, next, opened.stats);
      }
      report.changed += 1;
    }
  } catch {
    // The name went away or was taken meanwhile (only a live worker process could do that): not ours.
    report.refused.push({ path: entryPath, reason: 'symlink_or_gone' });
  } finally {
    await opened.handle.close();
  }
}

/**
 * Applies `transform` to the text of every regular file under `dir` (the worker's state), writing the result
 * back through the same descriptor when it differs (a hardlinked file is replaced instead, never written
 * through). Symlinks, special files and oversized files are refused (listed in the report, never followed);
 * subdirectories are opened through their parent's descriptor, so a directory swapped for a link cannot lead
 * the pass out of `dir`.
 */
export async function rewriteWorkerFiles(
  dir: string,
  transform: (text: string) => string,
  options: WorkerFileOptions = {},
): Promise<RewriteReport> {
  const report: RewriteReport = { changed: 0, refused: [] };
  const root = await openWorkerDirectory(dir);
  if (root === null) return report;
  const limits = { maxBytes: options.maxBytes ?? 64 * 1024 * 1024, uid: options.uid };
  const walk = async (directory: FileHandle, relative: string, depth: number): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(descriptorPath(directory), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const entryPath = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        if (depth >= MAX_DEPTH || !isPlainName(entry.name)) continue;
        let child: FileHandle;
        try {
          child = await open(inside(directory, entry.name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        } catch {
          report.refused.push({ path: entryPath, reason: 'symlink_or_gone' });
          continue;
        }
        try {
          await walk(child, entryPath, depth + 1);
        } finally {
          await child.close();
        }
        continue;
      }
      if (!entry.isFile()) {
        report.refused.push({
          path: entryPath,
          reason: entry.isSymbolicLink() ? 'symlink_or_gone' : 'not_regular',
        });
        continue;
      }
      await rewriteFile(directory, entry.name, entryPath, transform, limits, report);
    }
  };
  try {
    await walk(root, '', 0);
  } finally {
    await root.close();
  }
  return report;
}
