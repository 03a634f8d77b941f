/**
 * How a `serve --control` node runs a task it took from the fleet's queue: the remote's cached clone (as
 * `--repo`: fetched, cloned the first time, the node's own credentials), then the TaskBoard of that clone,
 * so the task goes through the same composition as `run` and `serve` (journal, note, sandbox, stop switch).
 */
import type { App } from '../app.js';
import type { FleetTask, FleetTaskEnd, FleetTaskRunner } from '../control/fleet-node.js';
import type { Redaction } from '../notes/redact.js';
import { TaskBoard } from './task-board.js';

export class FleetTaskBoards implements FleetTaskRunner {
  /** One board per cached clone, made on the first task of its remote. */
  private readonly boards = new Map<string, TaskBoard>();

  constructor(
    private readonly app: App,
    private readonly env: NodeJS.ProcessEnv,
    private readonly redaction: Redaction,
    private readonly options: {
      modelScript?: string;
      /** Copies the task's journal elsewhere (the fleet's database) until `ended()`; the task's end waits for it. */
      copyEvents?: (taskId: string, journalFile: string, ended: () => boolean) => Promise<unknown>;
    } = {},
  ) {}

  async run(task: FleetTask): Promise<FleetTaskEnd> {
    const { prepareRepositoryCache } = await import('../remote/repository-cache.js');
    const cached = await prepareRepositoryCache({
      url: task.repoUrl,
      env: this.env,
      ...(task.base !== null ? { base: task.base } : {}),
    });
    this.redaction.add(cached.secrets);
    let board = this.boards.get(cached.root);
    if (board === undefined) {
      board = new TaskBoard(cached.root, this.app, this.env, {
        ...(this.options.modelScript ? { modelScript: this.options.modelScript } : {}),
      });
      this.boards.set(cached.root, board);
    }
    // TODO(issue 36, step 4): a task that already has a journal in the database is resumed (board.resume on
    //   the remote's refs) instead of started again.
    // The base as a commit: the cache is bare-like, its branches are the remote's, fetched now.
    await board.start({ taskId: task.taskId, prd: task.prd, base: cached.baseSha });
    const taskBoard = board;
    const copied = this.options.copyEvents?.(
      task.taskId,
      board.journalFile(task.taskId),
      () => !taskBoard.isLive(task.taskId),
    );
    await board.settled(task.taskId);
    await copied;
    const ended = await board.get(task.taskId);
    return {
      state: ended?.state ?? null,
      exitCode: ended?.exitCode ?? null,
      reason: ended?.error ?? ended?.reason ?? null,
    };
  }

  /** Every board's tasks (to stop them with the server). */
  all(): TaskBoard[] {
    return [...this.boards.values()];
  }
}
