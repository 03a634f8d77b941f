/**
 * How much disk a worker-writable directory takes, measured from the host the way `du` does: allocated blocks
 * (`st_blocks`, so a sparse file counts what it really holds and a file still in the page cache counts what it
 * reserved), every entry counted once however many hard links it has, symbolic links never followed (a link
 * counts its own blocks, never its target's), and no other file system entered. The names are attacker data:
 * they are only joined to their parent's path, never interpreted.
 *
 * A walk is bounded: at most `maxEntries` entries and `budgetMs` of time; a walk cut short says so, and what it
 * counted is a lower bound (enough to prove a cap was exceeded, never to prove it was not).
 */
import type { Stats } from 'node:fs';
import { lstat, opendir } from 'node:fs/promises';
import path from 'node:path';

export interface DiskUsage {
  /** Allocated bytes of every entry seen (the directory itself included). */
  bytes: number;
  entries: number;
  /** False when the walk stopped at its entry or time bound, or could not read a directory. */
  complete: boolean;
}

export interface WalkBounds {
  budgetMs: number;
  maxEntries: number;
}

export const DEFAULT_WALK_BOUNDS: WalkBounds = { budgetMs: 10_000, maxEntries: 1_000_000 };

/** lstat calls in flight at once (libuv's thread pool has 4 threads; more only queue). */
const PARALLEL_LSTATS = 32;

/** Measures `root` (a directory, not followed if it is a link). Never throws: a missing root is 0 bytes. */
export async function measureDiskUsage(
  root: string,
  bounds: WalkBounds = DEFAULT_WALK_BOUNDS,
): Promise<DiskUsage> {
  const deadline = Date.now() + bounds.budgetMs;
  const top = await lstat(root).catch(() => null);
  if (!top) return { bytes: 0, entries: 0, complete: true };
  const seen = new Set<string>();
  const usage: DiskUsage = { bytes: 0, entries: 0, complete: true };
  const count = (info: Stats): void => {
    usage.entries += 1;
    if (info.nlink > 1) {
      const key = `${info.dev}:${info.ino}`;
      if (seen.has(key)) return;
      seen.add(key);
    }
    usage.bytes += info.blocks * 512;
  };
  count(top);
  if (!top.isDirectory()) return usage;
  const pending: string[] = [root];
  const cut = () => Date.now() > deadline || usage.entries >= bounds.maxEntries;
  while (pending.length > 0) {
    if (cut()) return { ...usage, complete: false };
    const dir = pending.pop()!;
    // Streamed in batches, never listed whole: a directory of a million names costs no more memory than one.
    const handle = await opendir(dir, { bufferSize: PARALLEL_LSTATS }).catch(() => null);
    if (!handle) {
      usage.complete = false;
      continue;
    }
    let batch: string[] = [];
    const flush = async () => {
      const stats = await Promise.all(batch.map((full) => lstat(full).catch(() => null)));
      stats.forEach((info, index) => {
        if (!info) return;
        count(info);
        // Another file system mounted below (none is, on the host) is not this directory's usage.
        if (info.isDirectory() && info.dev === top.dev) pending.push(batch[index]!);
      });
      batch = [];
    };
    try {
      for await (const entry of handle) {
        batch.push(path.join(dir, entry.name));
        if (batch.length < PARALLEL_LSTATS) continue;
        await flush();
        if (cut()) return { ...usage, complete: false };
      }
      await flush();
    } catch {
      usage.complete = false;
    }
  }
  return usage;
}
