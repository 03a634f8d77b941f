/**
 * The disk caps of a sandbox (`sandbox.disk.repository`, `sandbox.disk.codexHome`), watched from the host. The
 * sandbox repository and CODEX_HOME are bind mounts of host directories, and neither Docker's overlay2 on
 * ext4 nor a bind mount has a quota, so nothing stops a write at the cap: the watch measures how much each
 * directory grew since the sandbox was set up and, the first time one grows past its cap, stops every
 * process in the sandbox at once and keeps the figures for the task's reason.
 *
 * Two clocks keep it cheap and quick. Every `pollMs` (250 ms) it asks the file system holding each directory
 * how many blocks are free (`statfs`, microseconds, blind to who wrote); a full walk (disk-usage.ts) runs when
 * the free space fell by half of the smallest headroom left since the last walk, and at least every
 * `intervalMs` (2 s) otherwise. A walk of a huge tree takes time: the next periodic one waits at least four
 * times as long as the last took, so the watch spends at most about a fifth of one core on it.
 *
 * A hard cap (cap-volume.ts: the directory is a file system of the cap's size) needs no walk: no write passes
 * it, and the watch only tells the task it was reached, when `statfs` finds less than {@link FULL_BYTES} free.
 */
import { statfs } from 'node:fs/promises';
import type { DiskCap, DiskCapReached } from '../core/limits.js';
import { DEFAULT_WALK_BOUNDS, measureDiskUsage, type WalkBounds } from './disk-usage.js';

export interface WatchedDirectory {
  cap: DiskCap;
  path: string;
  limitBytes: number;
  /** The directory is a file system of its own, sized for the cap (a hard cap). */
  hard?: boolean;
}

/** A hard-capped file system with less than this free is full: the cap was reached. */
export const FULL_BYTES = 1024 ** 2;

/** Used and free bytes of the file system holding `dir` (free as an unprivileged writer sees it). */
async function fileSystemUse(dir: string): Promise<{ used: number; free: number } | null> {
  try {
    const info = await statfs(dir);
    return { used: (info.blocks - info.bfree) * info.bsize, free: info.bavail * info.bsize };
  } catch {
    return null;
  }
}

export interface DiskWatchOptions {
  directories: readonly WatchedDirectory[];
  /** Stops the sandbox's processes; called once, when the first cap is exceeded. */
  onExceeded: (reached: DiskCapReached) => Promise<void>;
  intervalMs?: number;
  pollMs?: number;
  bounds?: WalkBounds;
}

/** Free bytes of the file system holding `dir`; null when it cannot be asked. */
async function freeBytes(dir: string): Promise<number | null> {
  try {
    const info = await statfs(dir);
    return info.bfree * info.bsize;
  } catch {
    return null;
  }
}

export class DiskWatch {
  private readonly baseline = new Map<DiskCap, number>();
  private watched: readonly WatchedDirectory[] = [];
  private hardCapped: readonly WatchedDirectory[] = [];
  private readonly grew = new Map<DiskCap, number>();
  private freeAtLastWalk: (number | null)[] = [];
  private lastWalkEnded = 0;
  private lastWalkMs = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private reached: DiskCapReached | null = null;
  private readonly intervalMs: number;
  private readonly pollMs: number;
  private readonly bounds: WalkBounds;

  constructor(private readonly options: DiskWatchOptions) {
    this.intervalMs = options.intervalMs ?? 2_000;
    this.pollMs = options.pollMs ?? 250;
    this.bounds = options.bounds ?? DEFAULT_WALK_BOUNDS;
  }

  /**
   * Measures the directories as they are now (the baseline), then watches until {@link stop}. A directory
   * whose baseline cannot be measured whole (over the entry bound, or over a minute) is not watched: growth
   * measured against a part would compare different parts.
   */
  async start(): Promise<void> {
    for (const dir of this.options.directories) {
      if (dir.hard) {
        const use = await fileSystemUse(dir.path);
        if (use) this.baseline.set(dir.cap, use.used);
        continue;
      }
      const usage = await measureDiskUsage(dir.path, { ...this.bounds, budgetMs: 60_000 });
      if (!usage.complete) continue;
      this.baseline.set(dir.cap, usage.bytes);
      this.grew.set(dir.cap, 0);
    }
    this.hardCapped = this.options.directories.filter((dir) => dir.hard && this.baseline.has(dir.cap));
    this.watched = this.options.directories.filter((dir) => !dir.hard && this.baseline.has(dir.cap));
    this.freeAtLastWalk = await this.freeSpace();
    this.lastWalkEnded = Date.now();
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** The cap exceeded, once one was (the watch has then stopped). */
  capReached(): DiskCapReached | null {
    return this.reached;
  }

  /**
   * Measures now, between the watch's own walks (a run that wrote fast and ended before the next walk is
   * caught here): the cap exceeded, if any.
   */
  async check(): Promise<DiskCapReached | null> {
    if (!this.reached) await this.checkFull();
    if (!this.reached && this.watched.length > 0) await this.walk();
    return this.reached;
  }

  /** A hard-capped file system that is full: its cap was reached. */
  private async checkFull(): Promise<void> {
    for (const dir of this.hardCapped) {
      if (this.reached) return;
      const use = await fileSystemUse(dir.path);
      if (!use || use.free >= FULL_BYTES) continue;
      await this.exceeded({
        code: 'disk',
        cap: dir.cap,
        limitBytes: dir.limitBytes,
        grewBytes: Math.max(0, use.used - (this.baseline.get(dir.cap) ?? 0)),
        path: dir.path,
        hard: true,
      });
    }
  }

  private schedule(): void {
    if (this.stopped || this.watched.length + this.hardCapped.length === 0) return;
    this.timer = setTimeout(() => void this.tick(), this.pollMs);
    // The watch never keeps the runner alive on its own.
    this.timer.unref();
  }

  private freeSpace(): Promise<(number | null)[]> {
    return Promise.all(this.watched.map((dir) => freeBytes(dir.path)));
  }

  /** The smallest room left under a cap, as of the last walk. */
  private headroom(): number {
    return Math.min(...this.watched.map((dir) => dir.limitBytes - (this.grew.get(dir.cap) ?? 0)));
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    await this.checkFull();
    if (this.stopped || this.watched.length === 0) return this.schedule();
    const sinceWalk = Date.now() - this.lastWalkEnded;
    let due = sinceWalk >= Math.max(this.intervalMs, 4 * this.lastWalkMs);
    if (!due && sinceWalk >= this.lastWalkMs) {
      const free = await this.freeSpace();
      const fell = Math.max(
        0,
        ...free.map((now, index) => {
          const before = this.freeAtLastWalk[index];
          return now === null || before === null || before === undefined ? 0 : before - now;
        }),
      );
      due = fell >= this.headroom() / 2;
    }
    if (due) await this.walk();
    this.schedule();
  }

  private async walk(): Promise<void> {
    const started = Date.now();
    this.freeAtLastWalk = await this.freeSpace();
    for (const dir of this.watched) {
      if (this.reached) return;
      const usage = await measureDiskUsage(dir.path, this.bounds);
      const grew = usage.bytes - (this.baseline.get(dir.cap) ?? 0);
      this.grew.set(dir.cap, grew);
      // A walk cut short counted less than there is: over the cap is still over it.
      if (grew > dir.limitBytes) {
        await this.exceeded({
          code: 'disk',
          cap: dir.cap,
          limitBytes: dir.limitBytes,
          grewBytes: grew,
          path: dir.path,
        });
        return;
      }
    }
    this.lastWalkEnded = Date.now();
    this.lastWalkMs = this.lastWalkEnded - started;
  }

  private async exceeded(reached: DiskCapReached): Promise<void> {
    if (this.reached) return;
    this.reached = reached;
    this.stop();
    await this.options.onExceeded(reached).catch(() => undefined);
  }
}
