/**
 * How a `serve --control` node runs a task it took from the fleet's queue: the remote's cached clone (as
 * `--repo`: fetched, cloned the first time, the node's own credentials), then the TaskBoard of that clone,
 * so the task goes through the same composition as `run` and `serve` (journal, note, sandbox, stop switch).
 *
 * Nothing is lost with the node: after every worker run (the journal's `facts`, `preserved` and
 * `task_finished` events) the task branch and its WIP ref are pushed from the host to the remote. A task
 * another node ran before is resumed here: its branch and WIP ref fetched from the remote, its journal
 * rebuilt from the database's copy, then the board's resume (the path `agent-runner resume` takes), or its
 * follow-up when one was queued for the ended task (`POST /api/tasks/{id}/followup` on any node, or a review's
 * webhook: the review read here, fleet-review-followup.ts; a task the fleet did not run adopted from the remote's
 * state ref first, fleet-adopt.ts). A task whose job asks for a delivery (a webhook's
 * task from an issue) is delivered once it has ended, after the node's last push (fleet-delivery.ts).
 */
import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { App } from '../app.js';
import type { FleetTask, FleetTaskEnd, FleetTaskRunner } from '../control/fleet-node.js';
import type { TaskRequest, TaskRequestTarget } from '../control/task-requests.js';
import type { Redaction } from '../notes/redact.js';
import { pushTaskBranch } from '../deliver/push.js';
import { tryGit } from '../workspace/git/git-command.js';
import { taskLayout, wipRef } from '../workspace/layout.js';
import { taskStateRef } from '../remote/remote-task-state.js';
import { namedForge } from '../remote/remote-url.js';
import { adoptedPrd, adoptRemoteTask } from './fleet-adopt.js';
import { deliverFleetTask } from './fleet-delivery.js';
import { startFleetReviewFollowup } from './fleet-review-followup.js';
import { journalLines } from './journal-follow.js';
import { TaskBoard } from './task-board.js';

/** The journal events after which a node pushes: a run's commits are on the branch, its WIP saved, the end. */
const PUSH_AFTER = new Set(['facts', 'preserved', 'task_finished']);

export class FleetTaskBoards implements FleetTaskRunner, TaskRequestTarget {
  /** One board per cached clone, made on the first task of its remote. */
  private readonly boards = new Map<string, TaskBoard>();
  /** The board each running task is on (to stop it). */
  private readonly boardOf = new Map<string, TaskBoard>();
  /** Tasks this node lost to another: nothing of theirs is pushed any more. */
  private readonly abandoned = new Set<string>();
  /** The reply each running follow-up from review posts on its request once it has ended. */
  private readonly reviewReplies = new Map<string, () => Promise<void>>();

  constructor(
    private readonly app: App,
    private readonly env: NodeJS.ProcessEnv,
    private readonly redaction: Redaction,
    private readonly options: {
      modelScript?: string;
      /** Copies the task's journal elsewhere (the fleet's database) until `ended()`; the task's end waits for it. */
      copyEvents?: (task: FleetTask, journalFile: string, ended: () => boolean) => Promise<unknown>;
      /** Records an adopted task's own PRD on its row (src/control/task-queue.ts `recordAdoptedPrd`). */
      recordPrd?: (task: FleetTask, prd: string) => Promise<unknown>;
      /** The task's journal lines as the fleet's database holds them (a task another node ran before). */
      journalOf?: (taskId: string) => Promise<string[]>;
      log?: (line: string) => void;
    } = {},
  ) {}

  async run(task: FleetTask): Promise<FleetTaskEnd> {
    const { cached, access, board } = await this.clone(task);
    // What the remote holds now: the lease of the first push (another node's last push, or nothing).
    const { branch, branchRef } = taskLayout(cached.root, task.taskId);
    let pushed = await refCommit(cached.root, `refs/remotes/origin/${branch}`);
    const journalFile = board.journalFile(task.taskId);
    const resumed = task.resume && (await this.rebuildJournal(task.taskId, journalFile));
    // A review of a task the fleet did not run (no journal in its copy): rebuilt from the remote's state ref.
    const adopted = !resumed && task.review !== undefined;
    if (adopted) {
      const refused = await this.adopt(task, cached.root);
      if (refused !== null) return refused;
    }
    // The pushes follow what this attempt writes, from here on.
    const before = await lineCount(journalFile);
    if (resumed || adopted) {
      // The branch as the remote holds it (commits of the node that ran it before), then the resume path.
      if (pushed !== null) await tryGit(['update-ref', branchRef, pushed], { cwd: cached.root });
      const finished = await this.continueTask(board, task, cached.root, access.gitConfig);
      if (finished !== null) {
        // The fleet has an adopted task from now on, even when its review ran nothing: its journal copied.
        if (adopted) await this.options.copyEvents?.(task, journalFile, () => true);
        await this.deliver(task, cached, pushed, access.gitConfig, 'ended elsewhere');
        return finished;
      }
    } else {
      // The base as a commit: the cache is bare-like, its branches are the remote's, fetched now.
      await board.start({ taskId: task.taskId, prd: task.prd, base: cached.baseSha });
    }
    this.boardOf.set(task.taskId, board);
    const taskBoard = board;
    const ended = () => !taskBoard.isLive(task.taskId);
    const copied = this.options.copyEvents?.(task, journalFile, ended);
    const push = async (last = false) => {
      // Fenced: a node whose lease was taken over pushes nothing. While the database is away a run's push is
      // left to the next one; the last one waits (up to a minute) to know.
      if (this.abandoned.has(task.taskId)) return;
      if (task.holds && !(await leaseHeld(task.holds, last ? 60 : 0))) return;
      const result = await pushTaskBranch({
        repoRoot: cached.root,
        taskId: task.taskId,
        remoteName: 'origin',
        env: this.env,
        forgeOverride: null,
        leaseFor: () => pushed,
        redact: this.redaction.redact,
        credentialConfig: access.gitConfig,
        extraRefs: [wipRef(task.taskId)],
      });
      if (result.ok) pushed = result.sha;
      else if (result.kind !== 'no_branch') this.options.log?.(`task ${task.taskId}: ${result.message}`);
    };
    const pushes = this.pushAfterRuns(journalFile, before, ended, push);
    try {
      await board.settled(task.taskId);
      await pushes;
      await push(true);
      await copied;
      await this.reviewReplies.get(task.taskId)?.();
      // After the node's last push, from where it left the branch.
      await this.deliver(task, cached, pushed, access.gitConfig, 'ended here');
    } finally {
      this.reviewReplies.delete(task.taskId);
      this.boardOf.delete(task.taskId);
    }
    const end = await board.get(task.taskId);
    return {
      state: end?.state ?? null,
      exitCode: end?.exitCode ?? null,
      reason: end?.error ?? end?.reason ?? null,
    };
  }

  /**
   * The remote's cached clone for `task` (fetched, the node's own credentials), the git config that carries them
   * for the node's pushes, and the clone's board. The forge a host does not name (GitHub Enterprise, a
   * self-hosted GitLab) is AGENT_RUNNER_FORGE's, as for `run --repo`, so the node's forge token answers both.
   */
  private async clone(task: FleetTask) {
    const { prepareRepositoryCache, remoteNetworkAccess } = await import('../remote/repository-cache.js');
    const forge = namedForge(undefined, this.env);
    const cached = await prepareRepositoryCache({
      url: task.repoUrl,
      env: this.env,
      forge,
      ...(task.base !== null ? { base: task.base } : {}),
      // A review's job fetches them too: a task the fleet did not run is rebuilt from its state ref.
      ...(task.resume || task.review !== undefined ? { taskRefs: task.taskId } : {}),
    });
    this.redaction.add(cached.secrets);
    let board = this.boards.get(cached.root);
    if (board === undefined) {
      board = new TaskBoard(cached.root, this.app, this.env, {
        ...(this.options.modelScript ? { modelScript: this.options.modelScript } : {}),
      });
      this.boards.set(cached.root, board);
    }
    return { cached, access: remoteNetworkAccess(task.repoUrl, this.env, forge), board };
  }

  /**
   * A review's task the fleet did not run, rebuilt from the remote (fleet-adopt.ts); its end when it cannot be.
   * The fleet's row shows the task's own PRD from then on, not the placeholder the webhook wrote.
   */
  private async adopt(task: FleetTask, root: string): Promise<FleetTaskEnd | null> {
    if (task.review === undefined) return null;
    const refused = await adoptRemoteTask({
      root,
      task: { ...task, review: task.review },
      env: this.env,
      redaction: this.redaction,
      log: (line) => this.options.log?.(line),
    });
    if (refused !== null) return refused;
    const prd = adoptedPrd(root, task.taskId);
    if (prd !== null) await this.options.recordPrd?.(task, prd).catch(() => undefined);
    return null;
  }

  /**
   * The resume path of a task another node ran (null: it runs now), or its follow-up when it ended and one was
   * queued; a follow-up whose node died is resumed, not begun again.
   */
  private async continueTask(
    board: TaskBoard,
    task: FleetTask,
    root: string,
    credentialConfig: Record<string, string>,
  ): Promise<FleetTaskEnd | null> {
    const before = await board.get(task.taskId);
    const ended = before?.status === 'finished';
    if (task.review && ended) {
      const unchanged = { state: before.state ?? null, exitCode: before.exitCode ?? null };
      const started = await startFleetReviewFollowup({
        board,
        root,
        taskId: task.taskId,
        review: task.review,
        env: this.env,
        redaction: this.redaction,
        log: (line) => this.options.log?.(line),
        ...(Object.keys(credentialConfig).length > 0 ? { credentialConfig } : {}),
      }).catch((error: unknown) => {
        // The review could not be read (the forge away, the request closed): the task's end is not the review's.
        this.options.log?.(
          `task ${task.taskId}: no follow-up from the review of ${task.review?.requestUrl}: ${(error as Error).message}`,
        );
        return null;
      });
      // Nothing to follow up: the task's end stays what it was.
      if (started === null) return unchanged;
      this.reviewReplies.set(task.taskId, started.reply);
      return null;
    }
    const next =
      task.followup && ended ? board.followup(task.taskId, task.followup) : board.resume(task.taskId);
    return next.then(
      () => null,
      async (error: unknown) => {
        // The node died after the task's end but before the database heard of it: the journal has the end.
        const end = await board.get(task.taskId);
        if (end?.state) return { state: end.state, exitCode: end.exitCode ?? null };
        throw error;
      },
    );
  }

  /**
   * The delivery the task asked for (fleet-delivery.ts): recorded and logged, never the task's end. Not by a node
   * that lost the task. A task that ended on a node that died before the fleet heard of it is delivered here
   * unless that node had begun to (its delivery pushed the task's state ref, which only delivery writes): once,
   * not twice.
   */
  private async deliver(
    task: FleetTask,
    cached: { root: string; baseBranch: string },
    pushed: string | null,
    credentialConfig: Record<string, string>,
    ended: 'ended here' | 'ended elsewhere',
  ): Promise<void> {
    if (task.deliver === undefined || this.abandoned.has(task.taskId)) return;
    if (task.holds && !(await leaseHeld(task.holds, 60))) return;
    if (ended === 'ended elsewhere' && (await refCommit(cached.root, taskStateRef(task.taskId))) !== null)
      return;
    await deliverFleetTask({
      root: cached.root,
      taskId: task.taskId,
      deliver: task.deliver,
      baseBranch: cached.baseBranch,
      pushed,
      credentialConfig,
      env: this.env,
      redaction: this.redaction,
      log: (line) => this.options.log?.(line),
    });
  }

  async abandon(taskId: string): Promise<void> {
    this.abandoned.add(taskId);
    const board = this.boardOf.get(taskId);
    if (board?.isLive(taskId)) board.stop(taskId);
  }

  /** Tasks running here whose board holds them (a request from another node can be applied to them). */
  liveTasks(): string[] {
    return [...this.boardOf].filter(([taskId, board]) => board.isLive(taskId)).map(([taskId]) => taskId);
  }

  /** A request written on another node (task-requests.ts), applied as the local API applies it. */
  apply(taskId: string, request: TaskRequest): void {
    const board = this.boardOf.get(taskId);
    if (board === undefined) throw new Error(`task ${taskId} does not run here`);
    if (request.kind === 'stop') board.stop(taskId);
    else board.answer(taskId, request.text);
    if (request.by !== undefined)
      board.recordAudit(
        taskId,
        {
          ...request.by,
          action: request.kind === 'stop' ? 'task.stop' : 'task.answer',
          taskId,
          status: 202,
        },
        new Date().toISOString(),
      );
  }

  /** Every board's tasks (to stop them with the server). */
  all(): TaskBoard[] {
    return [...this.boards.values()];
  }

  /** Follows the journal and pushes after each event of {@link PUSH_AFTER}, one push at a time. */
  private async pushAfterRuns(
    journalFile: string,
    afterLine: number,
    ended: () => boolean,
    push: () => Promise<void>,
  ) {
    const done = new AbortController();
    for await (const line of journalLines(journalFile, {
      afterLine,
      follow: true,
      signal: done.signal,
      ended,
    })) {
      let type: unknown;
      try {
        type = (JSON.parse(line.text) as { type?: unknown }).type;
      } catch {
        continue;
      }
      if (typeof type === 'string' && PUSH_AFTER.has(type)) await push().catch(() => undefined);
    }
  }

  /**
   * Writes the database's copy of the journal where the resume path reads it, unless this node's own journal
   * is as long already (it ran the task before). False when the database has none (nothing to resume).
   */
  private async rebuildJournal(taskId: string, journalFile: string): Promise<boolean> {
    const lines = (await this.options.journalOf?.(taskId)) ?? [];
    if (lines.length === 0) return (await lineCount(journalFile)) > 0;
    if ((await lineCount(journalFile)) >= lines.length) return true;
    await mkdir(path.dirname(journalFile), { recursive: true });
    await writeFile(journalFile, lines.map((line) => `${line}\n`).join(''), { mode: 0o600 });
    return true;
  }
}

/** Whether the lease is held, asked up to `retries` more times a second apart while the database is away. */
async function leaseHeld(holds: () => Promise<boolean>, retries: number): Promise<boolean> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await holds();
    } catch {
      if (attempt >= retries) return false;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

async function refCommit(cwd: string, ref: string): Promise<string | null> {
  const result = await tryGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd });
  return result.exitCode === 0 ? result.stdout.trim() : null;
}

/** Lines of a journal file now (0 when it does not exist). */
async function lineCount(file: string): Promise<number> {
  if (!(await stat(file).catch(() => null))) return 0;
  let count = 0;
  const stop = new AbortController();
  for await (const line of journalLines(file, { afterLine: 0, follow: false, signal: stop.signal }))
    count = line.id;
  return count;
}
