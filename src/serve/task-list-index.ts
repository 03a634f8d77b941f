/**
 * The board's lines of every task of a repository, held in memory, so that a page of `GET /api/tasks` is a
 * binary search and a slice, not a read of 10,000 journals. Each line is kept with its task's signature (the
 * run folder's, the journal's and the project journal's size and modification time); a refresh looks at the
 * signatures only (one `stat` each, asynchronous, in batches that let requests through) and reads again the
 * tasks whose files changed, and those a live process holds (their liveness changes with no file changing).
 *
 * A request is answered from the lines as they are (stale while revalidating): when they are older than
 * {@link REFRESH_MS}, it starts one refresh in the background and does not wait for it. What this server runs
 * itself is never stale (the board gives those lines on each request); a task started or changed from a
 * terminal shows up within about a second plus one refresh (on 10,000 tasks on a busy 2-core machine: a few
 * hundred ms). Only the first request waits, for the first reading of every journal.
 */
import { statSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { JournalTailCache } from '../lifecycle/journal-tail-cache.js';
import { readTask } from '../lifecycle/task-inventory.js';
import { taskLayout } from '../workspace/layout.js';
import { boardTask, type BoardTask } from './board-view.js';
import { pageOf, type ListKey, type TaskListQuery } from './task-list-query.js';

/** How old the lines may be before a request starts a refresh (the page asks every second). */
export const REFRESH_MS = 1_000;
/** Task folders looked at at once during a refresh. */
const BATCH = 64;

interface Line {
  signature: string;
  task: BoardTask;
}

/** A task's place in the board's order. */
export function boardKey(task: BoardTask): ListKey {
  return { createdAt: task.createdAt ?? '', taskId: task.taskId };
}

/** Newest first; the same created time: the greater id first. */
function byKey(a: BoardTask, b: BoardTask): number {
  const [x, y] = [boardKey(a), boardKey(b)];
  if (x.createdAt !== y.createdAt) return x.createdAt < y.createdAt ? 1 : -1;
  return x.taskId < y.taskId ? 1 : x.taskId > y.taskId ? -1 : 0;
}

async function directories(directory: string): Promise<string[]> {
  try {
    return (await readdir(directory, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return [];
  }
}

type FileStat = { ino: bigint; size: bigint; mtimeNs: bigint } | null | undefined;
const stamp = (info: FileStat) => (info ? `${info.ino}:${info.size}:${info.mtimeNs}` : '-');

async function fileSignature(file: string): Promise<string> {
  return stamp(await stat(file, { bigint: true }).catch(() => null));
}

/** The files whose change changes a task's line. */
const signatureFiles = (runDir: string) => [
  runDir,
  path.join(runDir, 'events.jsonl'),
  path.join(runDir, 'project.jsonl'),
];

/** One page of the board, and where the next starts. */
export interface BoardPage {
  tasks: BoardTask[];
  next: ListKey | 'end';
}

export class TaskListIndex {
  private lines = new Map<string, Line>();
  /** The lines in the board's order (made again after a refresh that changed any). */
  private sorted: BoardTask[] = [];
  private refreshedAt = 0;
  private refreshing: Promise<void> | null = null;
  private built: Promise<void> | null = null;
  /** Tasks read by `touch` while a refresh ran: the refresh keeps those lines (it may have read older ones). */
  private readonly touchedDuringRead = new Set<string>();

  constructor(
    private readonly repoRoot: string,
    private readonly journals: JournalTailCache,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A page of the board: the lines as they are (a refresh started in the background when they are old), with
   * `served` (what this server runs, always current) in place of their lines.
   */
  async page(query: TaskListQuery, served: readonly BoardTask[]): Promise<BoardPage> {
    await this.ready();
    if (this.now() - this.refreshedAt > REFRESH_MS) void this.refresh();
    const servedIds = new Set(served.map((task) => task.taskId));
    const matches = (task: BoardTask) =>
      (query.states === null || (task.state !== null && query.states.includes(task.state))) &&
      // A local task runs on no node of a fleet's list: a node filter keeps none of them.
      query.nodes === null;
    const own = served.filter(matches).sort(byKey);
    const indexed = this.sorted.filter((task) => !servedIds.has(task.taskId) && matches(task));
    const all = own.length === 0 ? indexed : [...indexed, ...own].sort(byKey);
    const { items, next } = pageOf(all, boardKey, query.cursor.tasks, query.limit);
    return { tasks: items, next };
  }

  /**
   * Reads a task's line again now (this server stopped running it: from here on the list shows the line held
   * here, which must not be older than what the server showed while it ran the task).
   */
  touch(taskId: string): void {
    let runDir: string;
    try {
      runDir = taskLayout(this.repoRoot, taskId).runDir;
    } catch {
      return;
    }
    const signature = signatureFiles(runDir)
      .map((file) => stamp(statSync(file, { bigint: true, throwIfNoEntry: false })))
      .join('|');
    const line = this.readLine(taskId, signature);
    if (line === null) this.lines.delete(taskId);
    else this.lines.set(taskId, line);
    if (this.refreshing !== null) this.touchedDuringRead.add(taskId);
    this.sorted = [...this.lines.values()].map((held) => held.task).sort(byKey);
  }

  private ready(): Promise<void> {
    this.built ??= this.refresh();
    return this.built;
  }

  /** One refresh at a time; a caller during one waits for it. */
  refresh(): Promise<void> {
    this.refreshing ??= this.read().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async read(): Promise<void> {
    const startedAt = this.now();
    const stateDir = path.join(this.repoRoot, '.agent-runner');
    const ids = [
      ...new Set([
        ...(await directories(path.join(stateDir, 'runs'))),
        ...(await directories(path.join(stateDir, 'worktrees'))),
      ]),
    ];
    const lines = new Map<string, Line>();
    let changed = ids.length !== this.lines.size;
    for (let index = 0; index < ids.length; index += BATCH) {
      const batch = ids.slice(index, index + BATCH);
      const signatures = await Promise.all(batch.map((taskId) => this.signature(taskId)));
      batch.forEach((taskId, at) => {
        const signature = signatures[at];
        if (signature === undefined || signature === null) return;
        const known = this.lines.get(taskId);
        const volatile = known?.task.status === 'running' || known?.task.status === 'unknown';
        if (known && known.signature === signature && !volatile) {
          lines.set(taskId, known);
          return;
        }
        const line = this.readLine(taskId, signature);
        if (line !== null) lines.set(taskId, line);
        changed = true;
      });
    }
    for (const taskId of this.touchedDuringRead) {
      const touched = this.lines.get(taskId);
      if (touched) lines.set(taskId, touched);
      else lines.delete(taskId);
      changed = true;
    }
    this.touchedDuringRead.clear();
    this.lines = lines;
    if (changed) this.sorted = [...lines.values()].map((line) => line.task).sort(byKey);
    this.refreshedAt = startedAt;
  }

  /** The files whose change changes the task's line; null when the name is no task id. */
  private async signature(taskId: string): Promise<string | null> {
    let layout;
    try {
      layout = taskLayout(this.repoRoot, taskId);
    } catch {
      return null;
    }
    return (await Promise.all(signatureFiles(layout.runDir).map(fileSignature))).join('|');
  }

  private readLine(taskId: string, signature: string): Line | null {
    let entry;
    try {
      entry = readTask(this.repoRoot, taskId, { journals: this.journals });
    } catch {
      return null; // gone meanwhile, or unreadable: the next refresh looks again
    }
    return entry === null ? null : { signature, task: boardTask(entry, undefined) };
  }
}
