/**
 * The tasks of one repository as the server sees them: every task the journals hold (started here, from a
 * terminal with `run`, or by an earlier server), and the ones this server runs itself, each through the same
 * composition as `run` (the App), with a stop switch (as Ctrl-C: the work is saved) and a pending `ask_human`
 * question that a client answers.
 */
import path from 'node:path';
import type { App } from '../app.js';
import type { TaskSpec } from '../compose/task-spec.js';
import type { ProjectOptions } from '../parallel/run-project.js';
import { UserError } from '../errors.js';
import { JournalTailCache } from '../lifecycle/journal-tail-cache.js';
import { hasTaskFiles, readTask } from '../lifecycle/task-inventory.js';
import { inspectTaskLock } from '../lifecycle/task-lock.js';
import { assertValidTaskId, taskLayout } from '../workspace/layout.js';
import type { AuditEntry } from '../identity/audit-entry.js';
import { TaskAuditJournal } from './task-audit-journal.js';
import { taskDiff } from './task-diff.js';
import type { FollowupRequest, StartTaskRequest } from './api-schemas.js';
import { RunSlots } from './run-slots.js';
import { followupSpec, resumeSpec, startSpec, type BoardSpecContext } from './board-specs.js';
import type { Redaction } from '../notes/redact.js';
import { NotServedError, TaskNotFoundError } from './board-errors.js';
export { NotServedError } from './board-errors.js';
import {
  boardTask,
  NO_DETAIL,
  preparingTask,
  taskDetail,
  type BoardTask,
  type RunningTask,
} from './board-view.js';
import { TaskListIndex, type BoardPage } from './task-list-index.js';
import type { TaskListQuery } from './task-list-query.js';

/** Tasks that ended with an error before their journal held an end: the newest are kept for the board. */
const MAX_ENDED_WITHOUT_JOURNAL = 100;

export class TaskBoard {
  /**
   * The tasks this server runs, and those that ended with an error before their journal said so; a task whose
   * journal holds its end is dropped from here once it ended (the journal tells the rest), so the map does
   * not grow with every task a long-lived server ran.
   */
  private readonly running = new Map<string, RunningTask>();
  /** Journals folded once and read on from where they stopped (the board asks every second). */
  private readonly journals = new JournalTailCache();
  private readonly index: TaskListIndex;
  /** Tasks of this server running now, and the queued ones' wake-ups, oldest first. */
  private readonly slots: RunSlots;
  private readonly audits: TaskAuditJournal;

  constructor(
    readonly repoRoot: string,
    private readonly app: App,
    readonly env: NodeJS.ProcessEnv,
    private readonly options: {
      /** The scripted model of every task that names none (`serve --model-script`: the demo). */
      modelScript?: string;
      /** Tasks running at once (`parallel.max`, or what the machine holds); more wait, `queued`. */
      maxRunning?: number;
      now?: () => Date;
    } = {},
  ) {
    this.slots = new RunSlots(options.maxRunning);
    this.index = new TaskListIndex(repoRoot, this.journals);
    this.audits = new TaskAuditJournal(
      (taskId) => this.journalFile(taskId),
      (text) => this.app.host.redaction.redactJsonText(text),
    );
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  /**
   * Starts a task; returns its id at once (the task goes on in this process). `deliver`: delivered once it ends
   * (push, then the pull/merge request, as `run --pr` does), as a webhook's task from an issue is.
   */
  async start(request: StartTaskRequest, options: { deliver?: boolean } = {}): Promise<string> {
    if (request.taskId !== undefined) {
      assertValidTaskId(request.taskId);
      if (this.running.has(request.taskId))
        throw new UserError('usage', `Task ${request.taskId} is already running on this server.`);
    }
    // Everything the client names is a file of the repository (not one scope.exclude keeps out) before it is read.
    const spec = await startSpec(this.specContext(), request);
    this.launch(spec, {}, options.deliver === true);
    return spec.taskId;
  }

  /**
   * Resumes a task from its journal (a stale one: its runner, perhaps an earlier server, died; or one that
   * ended NEEDS_REVIEW or FAILED), as `agent-runner resume` does; returns its id at once.
   */
  async resume(
    taskId: string,
    overrides: Record<string, unknown> = {},
    modelScript?: string,
  ): Promise<string> {
    assertValidTaskId(taskId);
    const current = await this.get(taskId);
    if (current === null) throw new TaskNotFoundError(taskId);
    if (this.isLive(taskId, current.status))
      throw new UserError('usage', `Task ${taskId} is running; it can be resumed once it has stopped.`);
    const { spec, projectOptions } = await resumeSpec(this.specContext(), taskId, overrides, modelScript);
    this.launch(spec, projectOptions);
    return taskId;
  }

  /**
   * Continues an ended task on its branch with a person's instruction, as `agent-runner followup` does; with
   * `pr`, delivered once it ends (the same pull/merge request). Returns its id at once.
   */
  async followup(taskId: string, request: FollowupRequest): Promise<string> {
    assertValidTaskId(taskId);
    const current = await this.get(taskId);
    if (current === null) throw new TaskNotFoundError(taskId);
    if (this.isLive(taskId, current.status))
      throw new UserError('usage', `Task ${taskId} is running; it can be followed up once it has ended.`);
    const spec = await followupSpec(this.specContext(), taskId, request);
    this.launch(spec, {}, request.pr === true);
    return taskId;
  }

  private specContext(): BoardSpecContext {
    return {
      repoRoot: this.repoRoot,
      env: this.env,
      now: () => this.now(),
      ...(this.options.modelScript ? { modelScript: this.options.modelScript } : {}),
    };
  }

  /** Runs a task in this process, with its stop switch and its question; `deliver`: delivered once it ends. */
  private launch(spec: TaskSpec, projectOptions: ProjectOptions, deliver = false): void {
    const task: RunningTask = {
      startedAt: this.now().toISOString(),
      stop: new AbortController(),
      hurry: new AbortController(),
      question: null,
      summary: null,
      error: null,
      queued: true,
      done: Promise.resolve(),
    };
    this.running.set(spec.taskId, task);
    this.audits.launching(spec.taskId);
    task.done = this.slot(task).then(() => this.runNow(spec, projectOptions, task, deliver));
  }

  /** Waits for a free slot (at most `maxRunning` tasks at once, in the order they were started). */
  private async slot(task: RunningTask): Promise<void> {
    await this.slots.take(task.stop.signal);
    task.queued = false;
  }

  private async runNow(
    spec: TaskSpec,
    projectOptions: ProjectOptions,
    task: RunningTask,
    deliver: boolean,
  ): Promise<void> {
    if (task.stop.signal.aborted) {
      task.error = 'stopped before it started (it was queued)';
      this.audits.ended(spec.taskId);
      this.slots.release();
      this.forget(spec.taskId, task);
      return;
    }
    await this.app
      .run(
        spec,
        {
          signal: task.stop.signal,
          hurry: task.hurry.signal,
          onEvent: (event) => this.audits.onEvent(spec.taskId, event),
          human: {
            ask: (question) =>
              new Promise<string | null>((resolve) => {
                task.question = {
                  text: question,
                  answer: (text) => {
                    task.question = null;
                    resolve(text);
                  },
                };
              }),
          },
        },
        projectOptions,
      )
      .then(
        async (summary) => {
          if (deliver) await deliverEnded(spec, this.env, this.app.host.redaction);
          task.summary = summary;
        },
        (error: unknown) => {
          task.error = error instanceof Error ? error.message : String(error);
        },
      );
    this.audits.ended(spec.taskId);
    this.slots.release();
    this.forget(spec.taskId, task);
  }

  /**
   * Drops an ended task whose journal holds its end (its summary, state and exit code are read from there);
   * one that ended with an error before its journal did stays, the newest {@link MAX_ENDED_WITHOUT_JOURNAL}.
   */
  private forget(taskId: string, task: RunningTask): void {
    if (this.running.get(taskId) !== task) return;
    this.index.touch(taskId);
    let entry;
    try {
      entry = readTask(this.repoRoot, taskId, { journals: this.journals });
    } catch {
      entry = null; // a damaged journal: the entry keeps what the server knows
    }
    const journalEnded =
      (entry?.journal?.finished ?? null) !== null || (entry?.project && entry.status === 'finished');
    if (journalEnded) {
      this.running.delete(taskId);
      return;
    }
    const ended = [...this.running].filter(([, other]) => other.summary !== null || other.error !== null);
    for (const [oldest] of ended.slice(0, Math.max(0, ended.length - MAX_ENDED_WITHOUT_JOURNAL)))
      this.running.delete(oldest);
  }

  /** Resolves once a task this server runs has ended (at once when it runs none by that id). */
  async settled(taskId: string): Promise<void> {
    await this.running.get(taskId)?.done;
  }

  /** How many tasks the server keeps in memory (running, queued, or ended without a journal end). */
  trackedTasks(): number {
    return this.running.size;
  }

  /** Stops a task this server runs, as Ctrl-C does (its work saved, its note written); a second stop hurries. */
  stop(taskId: string): 'stopping' | 'hurrying' {
    const task = this.served(taskId);
    if (!task.stop.signal.aborted) {
      task.stop.abort();
      // A queued task leaves the queue at once (it ends without starting).
      if (task.queued) this.slots.wakeAll();
      // Nobody will answer a question now: the task goes on to its note.
      task.question?.answer(null);
      return 'stopping';
    }
    task.hurry.abort();
    return 'hurrying';
  }

  /** Answers the task's pending `ask_human` question. */
  answer(taskId: string, text: string): void {
    const task = this.served(taskId);
    if (task.question === null)
      throw new UserError('usage', `Task ${taskId} has no question waiting for an answer.`);
    task.question.answer(text);
  }

  /** Every task of the repository, newest first (as created), current. */
  async list(): Promise<BoardTask[]> {
    await this.index.refresh();
    const all = { limit: Number.MAX_SAFE_INTEGER, cursor: {}, states: null, nodes: null };
    return (await this.page(all)).tasks;
  }

  /** A page of the board (task-list-index.ts: the lines in memory, what this server runs always current). */
  async page(query: TaskListQuery): Promise<BoardPage> {
    const served = await Promise.all([...this.running.keys()].map((taskId) => this.get(taskId)));
    return this.index.page(
      query,
      served.filter((task) => task !== null),
    );
  }

  /** One task, or null when the repository has no such task. */
  async get(taskId: string): Promise<BoardTask | null> {
    assertValidTaskId(taskId);
    const entry = readTask(this.repoRoot, taskId, { journals: this.journals });
    const running = this.running.get(taskId);
    if (entry) return boardTask(entry, running);
    return running ? preparingTask(taskId, running) : null;
  }

  /**
   * One task with what its journal holds: the plan (the acceptance criteria), every worker run's record, the
   * last attempt's summary (the criteria's evidence, the DoD, the usage); null when there is no such task.
   */
  async detail(taskId: string): Promise<ReturnType<typeof taskDetail> | null> {
    assertValidTaskId(taskId);
    // Only this task's files (not every journal of the repository): the page asks for it on every change.
    const entry = readTask(this.repoRoot, taskId, { journals: this.journals });
    if (entry === null) {
      const preparing = this.running.get(taskId);
      return preparing ? { ...preparingTask(taskId, preparing), ...NO_DETAIL } : null;
    }
    return taskDetail(entry, this.running.get(entry.taskId));
  }

  /** Whether any task this server runs has not ended. */
  hasLive(): boolean {
    return [...this.running.keys()].some((taskId) => this.isLive(taskId));
  }

  /**
   * The task branch's changes since the task's base (`git diff base...branch`, text); null when the task, its
   * base or its branch is not there (it ended before it had any).
   */
  async diff(taskId: string): Promise<string | null> {
    assertValidTaskId(taskId);
    const entry = readTask(this.repoRoot, taskId, { journals: this.journals });
    return taskDiff(this.repoRoot, taskId, entry?.journal?.baseSha);
  }

  /** Writes who acted on the task into its journal (held until a task launched here has journaled its start). */
  recordAudit(taskId: string, entry: AuditEntry, at: string): void {
    this.audits.record(taskId, entry, at);
  }

  /**
   * Whether the repository has the task or this server runs it: the same answer as `get` (a task starting in a
   * terminal has its run folder a moment before its journal; a watcher that came then waits for the journal).
   */
  exists(taskId: string): boolean {
    assertValidTaskId(taskId);
    // No journal read: a watcher of a 100 MB journal must not parse it.
    return this.running.has(taskId) || hasTaskFiles(this.repoRoot, taskId);
  }

  /** Whether the task may still write to its journal: this server runs it, or a live process holds its lock. */
  writing(taskId: string): boolean {
    if (this.running.has(taskId)) return this.isLive(taskId);
    const liveness = inspectTaskLock(taskLayout(this.repoRoot, taskId).runDir)?.liveness;
    return liveness === 'alive' || liveness === 'unknown';
  }

  /** Whether this server runs the task. */
  isServed(taskId: string): boolean {
    return this.running.has(taskId);
  }

  /** Where the task's note is. */
  notePath(taskId: string): string {
    return path.join(taskLayout(this.repoRoot, taskId).stateDir, `task-${taskId}.md`);
  }

  /** Whether the task may write more to its journal (this server runs it, or another process holds it). */
  isLive(taskId: string, status?: BoardTask['status']): boolean {
    const task = this.running.get(taskId);
    if (task) return task.summary === null && task.error === null;
    return status === 'running' || status === 'unknown';
  }

  /** The journal file of a task (a split PRD's parent has its project journal instead). */
  journalFile(taskId: string): string {
    return path.join(taskLayout(this.repoRoot, taskId).runDir, 'events.jsonl');
  }

  /** Waits for every task this server runs to end (after a stop of each). */
  async stopAll(): Promise<void> {
    for (const [taskId, task] of this.running)
      if (task.summary === null && task.error === null) this.stop(taskId);
    await Promise.all([...this.running.values()].map((task) => task.done));
  }

  private served(taskId: string): RunningTask {
    assertValidTaskId(taskId);
    const task = this.running.get(taskId);
    if (task !== undefined) return task;
    // An ended task is dropped from the map (its journal holds the end): say it ended, not that it runs elsewhere.
    const entry = readTask(this.repoRoot, taskId, { journals: this.journals });
    if (entry?.status === 'finished')
      throw new UserError(
        'usage',
        `Task ${taskId} has ended (${entry.state ?? 'finished'}): it has no question waiting for an answer and nothing to stop.`,
      );
    throw new NotServedError(taskId);
  }
}

/** Delivers a task that ended (push, then the pull/merge request); its outcome is in the delivery record. */
async function deliverEnded(spec: TaskSpec, env: NodeJS.ProcessEnv, redaction: Redaction): Promise<void> {
  const { deliverTask } = await import('../deliver/deliver-task.js');
  await deliverTask({
    repoRoot: spec.repoRoot,
    taskId: spec.taskId,
    settings: spec.config.deliver,
    env,
    redaction,
  }).catch(() => undefined);
}
