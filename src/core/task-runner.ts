/**
 * The AgentRunner loop. Imports ports only: the Meta-agent decides, the worker works in the sandbox, and the
 * runner decides completion from facts it observes itself. Every terminal path writes the note and stops
 * the sandbox.
 */
import { AgentRunnerError, EnvironmentError, EXIT_CODES } from '../errors.js';
import type { PatternLibrary } from '../patterns/pattern-library.js';
import { renderWorkerPrompt } from '../patterns/worker-prompt.js';
import { completionRefusals } from './completion-gate.js';
import type { RunnerEvent, StampedEvent, TaskStartOptions } from './events.js';
import type {
  Clock,
  HumanPort,
  MetaAgentPort,
  MetaView,
  NoteStorePort,
  PreparedTask,
  SandboxProviderPort,
  TaskWorkspacePort,
  WorkerAdapter,
} from './ports.js';
import { transition, type TaskEvent, type TaskState } from './task-state.js';
import type { DodOutcome, MetaDecision, Plan, RunRecord, TaskFacts, TaskSummary, Usage } from './types.js';
import { addUsage, costOf, totalTokens, ZERO_USAGE, type PriceTable } from './usage.js';

export interface TaskLimits {
  maxIterations: number;
  maxMetaCalls: number;
  wallClockMs: number;
  maxTokens?: number;
  maxCostUsd?: number;
}

export interface TaskRunnerOptions {
  taskId: string;
  prd: string;
  limits: TaskLimits;
  worker: { type: string; model: string; timeoutMs: number; graceMs: number };
  prices: PriceTable;
  dodSkipped: boolean;
  headless: boolean;
  patterns: PatternLibrary;
  runDir: string;
  /** Runs of an earlier, interrupted attempt of this task (resume). */
  previous?: {
    plan: Plan;
    runs: RunRecord[];
    threadId: string | null;
    metaCalls: number;
    usage: Usage;
    /** Worker usage of the earlier attempts (meta usage is `usage`). */
    workerUsage?: Usage;
    /** What the Meta-agent should know about the earlier attempt (a run cut short by a crash...). */
    feedback?: string[];
  };
  /** Recorded in `task_started` so `resume` can start the task again the same way. */
  startOptions?: TaskStartOptions;
}

/** Everything the note is written from. */
export interface TaskRecord {
  taskId: string;
  prd: string;
  state: TaskState;
  reason: string;
  plan: Plan | null;
  task: PreparedTask | null;
  runs: RunRecord[];
  metaCalls: number;
  usage: { meta: Usage; worker: Usage; total: Usage };
  startedAt: number;
  finishedAt: number;
  question: string | null;
  preservedRef: string | null;
  workerType: string;
  runDir: string;
  error: { code: string; message: string } | null;
}

export interface TaskRunnerDeps {
  meta: MetaAgentPort;
  workspace: TaskWorkspacePort;
  sandboxes: SandboxProviderPort;
  worker: WorkerAdapter;
  human: HumanPort;
  notes: NoteStorePort;
  clock: Clock;
  writeNote(record: TaskRecord): Promise<string>;
  onEvent?: (event: StampedEvent) => void;
}

/** An error whose cause chain says the disk is full: the task stops with `disk_full` (exit 4), not a bug. */
function diskFullError(error: unknown, runDir: string): EnvironmentError | null {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current; depth += 1) {
    if ((current as { code?: unknown }).code === 'ENOSPC') {
      return new EnvironmentError(
        'disk_full',
        `The disk is full: agent-runner could not write the task's logs under ${runDir} (${(current as Error).message}). ` +
          'Free some space (or move .agent-runner/runs to a larger disk), then continue with `agent-runner resume`.',
        { cause: error },
      );
    }
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** Ends the loop from deep inside it with a terminal state. */
class Stop extends Error {
  constructor(
    readonly state: 'COMPLETE' | 'FAILED' | 'NEEDS_REVIEW',
    readonly reason: string,
    readonly exitCode: number,
  ) {
    super(reason);
  }
}

export class TaskRunner {
  private state: TaskState = 'PENDING';
  private plan: Plan | null = null;
  private task: PreparedTask | null = null;
  private sandboxId: string | null = null;
  private readonly runs: RunRecord[] = [];
  private readonly feedback: string[] = [];
  private memory: MetaView['memory'] = [];
  private metaCalls = 0;
  private metaUsage: Usage = ZERO_USAGE;
  private workerUsage: Usage = ZERO_USAGE;
  private threadId: string | null = null;
  private question: string | null = null;
  private preservedRef: string | null = null;
  private startedAt = 0;
  /** Set when an event could not be recorded (the journal's disk is full...): the task stops with it. */
  private fatal: AgentRunnerError | null = null;
  private readonly fatalAbort = new AbortController();
  /** A worker ran since the last observation: its commits may not be on the task branch yet. */
  private unobservedRun: number | null = null;

  constructor(
    private readonly options: TaskRunnerOptions,
    private readonly deps: TaskRunnerDeps,
  ) {
    const previous = options.previous;
    if (previous) {
      this.plan = previous.plan;
      this.runs.push(...previous.runs);
      this.threadId = previous.threadId;
      this.metaCalls = previous.metaCalls;
      this.metaUsage = previous.usage;
      if (previous.workerUsage) this.workerUsage = previous.workerUsage;
      if (previous.feedback) this.feedback.push(...previous.feedback);
    }
  }

  /** Runs the task to a terminal state. Never throws for task-level failures: they end in the summary. */
  async run(outerSignal?: AbortSignal): Promise<TaskSummary> {
    this.startedAt = this.deps.clock.now();
    // A fatal recording error stops the worker like an interrupt does, but ends the task FAILED with it.
    const signal = outerSignal
      ? AbortSignal.any([outerSignal, this.fatalAbort.signal])
      : this.fatalAbort.signal;
    let stop: Stop;
    let error: AgentRunnerError | null = null;
    try {
      stop = await this.loop(signal);
    } catch (caught) {
      const fatal =
        this.fatal ?? (caught instanceof Stop ? null : diskFullError(caught, this.options.runDir));
      if (fatal) {
        error = fatal;
        stop = new Stop('FAILED', fatal.message, fatal.exitCode);
      } else if (caught instanceof Stop) stop = caught;
      else if (signal.aborted) stop = new Stop('NEEDS_REVIEW', 'interrupted', EXIT_CODES.interrupted);
      else {
        error =
          caught instanceof AgentRunnerError
            ? caught
            : new AgentRunnerError(
                'internal',
                `internal error: ${(caught as Error)?.message ?? String(caught)}`,
                {
                  cause: caught,
                },
              );
        stop = new Stop('FAILED', error.message, error.exitCode);
      }
    }
    return this.finish(stop, error);
  }

  private async loop(signal?: AbortSignal): Promise<Stop> {
    this.move({ type: 'start' });
    this.memory = await this.deps.notes.readMemory(this.options.taskId);
    await this.planWhilePreparing(signal);
    this.move({ type: 'planned' });

    for (;;) {
      this.checkLimits(signal);
      const { decision, usage } = await this.deps.meta.nextAction(this.view(), signal);
      this.countMeta(usage);
      this.emit({ type: 'decision', decision, usage });
      this.feedback.length = 0;
      switch (decision.action) {
        case 'abort':
          throw new Stop('FAILED', `the Meta-agent aborted: ${decision.reason}`, EXIT_CODES.failed);
        case 'ask_human': {
          const question = decision.question ?? decision.reason;
          const answer = this.options.headless ? null : await this.deps.human.ask(question);
          this.emit({ type: 'human', question, answer });
          if (answer === null) {
            this.question = question;
            throw new Stop(
              'NEEDS_REVIEW',
              `the Meta-agent needs an answer: ${question}`,
              EXIT_CODES.needsReview,
            );
          }
          this.feedback.push(`The person was asked "${question}" and answered: ${answer}`);
          break;
        }
        case 'mark_complete':
          await this.validateClaim(decision, signal);
          break;
        case 'run_worker':
          await this.runWorker(decision, signal);
          break;
      }
    }
  }

  /**
   * Planning needs only the PRD, the config and the memory, so the Meta-agent is asked at once while the
   * workspace and the sandbox are prepared. A failure on either side stops the other: a failed preparation
   * aborts the planning request; a failed planning keeps the sandbox from starting (a preparation already
   * under way finishes, so nothing is left half-made). Events keep their order: task, sandbox, plan.
   */
  private async planWhilePreparing(signal?: AbortSignal): Promise<void> {
    if (!this.plan) this.checkLimits(signal);
    const stopPlanning = new AbortController();
    const planSignal = signal ? AbortSignal.any([signal, stopPlanning.signal]) : stopPlanning.signal;
    // The first failure wins: the other side's error is only the consequence of being stopped.
    const first: { failed: boolean; error: unknown } = { failed: false, error: null };
    const failed = (error: unknown): never => {
      if (!first.failed) Object.assign(first, { failed: true, error });
      throw error;
    };
    const planning = this.plan
      ? null
      : this.deps.meta
          .plan({
            taskId: this.options.taskId,
            prd: this.options.prd,
            memory: this.memory,
            signal: planSignal,
          })
          .catch(failed);
    const preparing = (async () => {
      const task = await this.deps.workspace.prepare();
      if (first.failed) throw first.error;
      this.task = task;
      this.emit({
        type: 'task_started',
        taskId: this.options.taskId,
        branch: task.branch,
        baseSha: task.baseSha,
        worktreePath: task.worktreePath,
        dirtyStart: task.dirtyStart,
        ...(this.options.startOptions ? { options: this.options.startOptions } : {}),
      });
      this.sandboxId = await this.deps.sandboxes.start(task);
      this.emit({ type: 'sandbox_started', sandboxId: this.sandboxId });
    })().catch((error: unknown) => {
      stopPlanning.abort();
      return failed(error);
    });
    const [planned] = await Promise.allSettled([planning, preparing]);
    if (first.failed) throw first.error;
    if (planned.status === 'fulfilled' && planned.value) {
      const { plan, usage } = planned.value;
      this.countMeta(usage);
      this.plan = plan;
      this.emit({ type: 'plan', plan, usage });
    }
  }

  /** `mark_complete`: accepted only when the latest assessment and the facts agree. */
  private async validateClaim(decision: MetaDecision, signal?: AbortSignal): Promise<void> {
    this.move({ type: 'validate' });
    const last = this.runs.at(-1);
    const refusals = completionRefusals({
      criteria: this.plan?.acceptanceCriteria ?? [],
      assessment: last?.assessment,
      facts: last?.facts,
      dod: last?.dod,
      dodSkipped: this.options.dodSkipped,
    });
    if (refusals.length === 0) throw new Stop('COMPLETE', decision.reason, EXIT_CODES.complete);
    this.refuse([`mark_complete refused: ${refusals.join('; ')}`]);
    this.checkLimits(signal);
  }

  private async runWorker(decision: MetaDecision, signal?: AbortSignal): Promise<void> {
    const { limits } = this.options;
    if (this.runs.length >= limits.maxIterations) {
      throw new Stop(
        'NEEDS_REVIEW',
        `the limit of ${limits.maxIterations} worker runs was reached`,
        EXIT_CODES.needsReview,
      );
    }
    const call = decision.workerCall;
    if (!call || !this.plan || !this.task || !this.sandboxId)
      throw new Error('run_worker without its inputs');
    const patterns = this.options.patterns.resolve(decision.usedPatterns);
    const prompt = renderWorkerPrompt({
      taskId: this.options.taskId,
      title: this.plan.title,
      branch: this.task.branch,
      acceptanceCriteria: this.plan.acceptanceCriteria,
      scope: this.task.scopeStatement,
      patterns,
      instruction: call.prompt,
    });
    const index = this.runs.length + 1;
    const mode = call.mode === 'resume' && this.threadId ? 'resume' : 'exec';
    this.emit({ type: 'worker_started', run: index, mode, prompt });
    this.unobservedRun = index;
    const remaining = this.startedAt + limits.wallClockMs - this.deps.clock.now();
    const result = await this.deps.worker.run({
      sandboxId: this.sandboxId,
      mode,
      prompt,
      threadId: mode === 'resume' ? (this.threadId ?? undefined) : undefined,
      runDir: `${this.options.runDir}/run-${index}`,
      timeoutMs: Math.max(1000, Math.min(this.options.worker.timeoutMs, remaining)),
      graceMs: this.options.worker.graceMs,
      onEvent: (event) => this.emit({ type: 'worker_event', run: index, event }),
      signal,
    });
    if (result.threadId) this.threadId = result.threadId;
    const usage: Usage = {
      ...result.usage,
      costUsd: costOf(result.usage, this.options.worker.model, this.options.prices),
    };
    this.workerUsage = addUsage(this.workerUsage, usage);
    this.emit({
      type: 'worker_finished',
      run: index,
      exitCode: result.exitCode,
      timedOut: result.timedOut,
      failed: result.failed,
      durationMs: result.durationMs,
    });
    const record: RunRecord = {
      index,
      decision,
      startedAt: this.deps.clock.now() - result.durationMs,
      durationMs: result.durationMs,
      mode,
      exitCode: result.exitCode,
      timedOut: result.timedOut,
      failed: result.failed,
      threadId: result.threadId,
      commands: result.commands,
      finalMessage: result.finalMessage,
      errors: result.errors,
      usage,
      refusals: [],
    };
    this.runs.push(record);
    this.emit({ type: 'run_recorded', run: index, record: structuredClone(record) });
    if (signal?.aborted) throw new Error('interrupted');

    this.move({ type: 'validate' });
    const facts: TaskFacts = await this.deps.workspace.observe(this.sandboxId);
    this.unobservedRun = null;
    record.facts = facts;
    this.emit({ type: 'facts', run: index, facts });
    let dod: DodOutcome | undefined;
    if (!this.options.dodSkipped) {
      dod = await this.deps.workspace.runDod(this.sandboxId, facts, signal);
      record.dod = dod;
      this.emit({ type: 'dod', run: index, dod });
    }
    this.checkLimits(signal);
    const { assessment, usage: assessUsage } = await this.deps.meta.assess(
      this.view(),
      { run: record, facts, dod },
      signal,
    );
    this.countMeta(assessUsage);
    record.assessment = assessment;
    this.emit({ type: 'assessment', run: index, assessment, usage: assessUsage });
    const refusals = completionRefusals({
      criteria: this.plan.acceptanceCriteria,
      assessment,
      facts,
      dod,
      dodSkipped: this.options.dodSkipped,
    });
    if (refusals.length === 0) {
      this.emit({ type: 'run_recorded', run: index, record: structuredClone(record) });
      throw new Stop('COMPLETE', assessment.summary, EXIT_CODES.complete);
    }
    record.refusals = refusals;
    this.emit({ type: 'run_recorded', run: index, record: structuredClone(record) });
    this.refuse(refusals);
  }

  /** VALIDATING → FIXING → RUNNING, with the reasons going back to the Meta-agent. */
  private refuse(reasons: string[]): void {
    this.emit({ type: 'refused', reasons });
    this.feedback.push(...reasons);
    this.move({ type: 'fix', reasons });
    this.move({ type: 'retry' });
  }

  private checkLimits(signal?: AbortSignal): void {
    if (this.fatal) throw this.fatal;
    if (signal?.aborted) throw new Stop('NEEDS_REVIEW', 'interrupted', EXIT_CODES.interrupted);
    const { limits } = this.options;
    const elapsed = this.deps.clock.now() - this.startedAt;
    if (elapsed >= limits.wallClockMs) {
      throw new Stop(
        'NEEDS_REVIEW',
        `the wall-clock limit of ${Math.round(limits.wallClockMs / 1000)} s was reached`,
        EXIT_CODES.timeout,
      );
    }
    if (this.metaCalls >= limits.maxMetaCalls) {
      throw new Stop(
        'NEEDS_REVIEW',
        `the limit of ${limits.maxMetaCalls} Meta-agent calls was reached`,
        EXIT_CODES.needsReview,
      );
    }
    const total = addUsage(this.metaUsage, this.workerUsage);
    if (limits.maxTokens !== undefined && totalTokens(total) >= limits.maxTokens) {
      throw new Stop(
        'NEEDS_REVIEW',
        `the token budget of ${limits.maxTokens} was reached`,
        EXIT_CODES.needsReview,
      );
    }
    if (limits.maxCostUsd !== undefined && total.costUsd >= limits.maxCostUsd) {
      throw new Stop(
        'NEEDS_REVIEW',
        `the cost budget of $${limits.maxCostUsd} was reached`,
        EXIT_CODES.needsReview,
      );
    }
  }

  private view(): MetaView {
    if (!this.plan) throw new Error('no plan yet');
    return {
      taskId: this.options.taskId,
      prd: this.options.prd,
      plan: this.plan,
      history: this.runs,
      feedback: [...this.feedback],
      patterns: this.options.patterns.list().map(({ name, description }) => ({ name, description })),
      memory: this.memory,
    };
  }

  private countMeta(usage: Usage): void {
    this.metaCalls += 1;
    this.metaUsage = addUsage(this.metaUsage, usage);
  }

  private move(event: TaskEvent): void {
    const from = this.state;
    this.state = transition(from, event);
    const reason =
      'reason' in event ? event.reason : 'reasons' in event ? event.reasons.join('; ') : undefined;
    this.emit({ type: 'transition', from, to: this.state, ...(reason ? { reason } : {}) });
  }

  private emit(event: RunnerEvent): void {
    try {
      this.deps.onEvent?.({ ...event, at: new Date(this.deps.clock.now()).toISOString() });
    } catch (caught) {
      // A listener that cannot record the event (the journal's disk is full) stops the task: resume and the
      // person both depend on that record. The first such error is the one reported.
      if (this.fatal) return;
      this.fatal =
        diskFullError(caught, this.options.runDir) ??
        (caught instanceof AgentRunnerError
          ? caught
          : new AgentRunnerError('internal', `could not record an event: ${(caught as Error)?.message}`, {
              cause: caught,
            }));
      this.fatalAbort.abort(this.fatal);
    }
  }

  private async finish(stop: Stop, error: AgentRunnerError | null): Promise<TaskSummary> {
    if (this.state !== stop.state) {
      const event: TaskEvent =
        stop.state === 'COMPLETE'
          ? this.state === 'VALIDATING'
            ? { type: 'complete' }
            : { type: 'fail', reason: 'complete outside validation' }
          : stop.state === 'FAILED'
            ? { type: 'fail', reason: stop.reason }
            : { type: 'needs_review', reason: stop.reason };
      this.move(event);
    }
    const unobserved = this.unobservedRun;
    if (this.sandboxId && stop.state !== 'COMPLETE' && unobserved !== null) {
      // A run cut short (interrupt, error) was never observed: bring its commits to the task branch now, so
      // the note and the branch show them. Best effort: the Docker engine may be what failed (the commits
      // are still brought back then, from the sandbox repository on the host, before the facts fail).
      const facts = await this.deps.workspace.observe(this.sandboxId).catch(() => null);
      const record = this.runs.find((run) => run.index === unobserved);
      if (facts) this.emit({ type: 'facts', run: unobserved, facts });
      if (facts && record) {
        record.facts = facts;
        this.emit({ type: 'run_recorded', run: unobserved, record: structuredClone(record) });
      }
    }
    if (this.sandboxId && stop.state !== 'COMPLETE') {
      // Uncommitted work is never discarded: it goes to a WIP ref before the sandbox goes away.
      this.preservedRef = await this.deps.workspace.preserveUncommitted(this.sandboxId).catch(() => null);
      if (this.preservedRef) this.emit({ type: 'preserved', ref: this.preservedRef });
    }
    if (this.sandboxId) await this.deps.sandboxes.stop(this.sandboxId).catch(() => undefined);
    const finishedAt = this.deps.clock.now();
    const usage = {
      meta: this.metaUsage,
      worker: this.workerUsage,
      total: addUsage(this.metaUsage, this.workerUsage),
    };
    const record: TaskRecord = {
      taskId: this.options.taskId,
      prd: this.options.prd,
      state: this.state,
      reason: stop.reason,
      plan: this.plan,
      task: this.task,
      runs: this.runs,
      metaCalls: this.metaCalls,
      usage,
      startedAt: this.startedAt,
      finishedAt,
      question: this.question,
      preservedRef: this.preservedRef,
      workerType: this.options.worker.type,
      runDir: this.options.runDir,
      error: error ? { code: error.code, message: error.message } : null,
    };
    let notePath: string | null = null;
    try {
      notePath = await this.deps.writeNote(record);
      this.emit({ type: 'note_written', path: notePath });
    } catch (noteError) {
      this.emit({
        type: 'refused',
        reasons: [`the note could not be written: ${(noteError as Error).message}`],
      });
    }
    const lastFacts = [...this.runs].reverse().find((run) => run.facts)?.facts;
    const summary: TaskSummary = {
      taskId: this.options.taskId,
      title: this.plan?.title ?? this.options.taskId,
      state: this.state,
      reason: stop.reason,
      branch: this.task?.branch ?? `agent-runner/${this.options.taskId}`,
      headSha: lastFacts?.headSha ?? this.task?.baseSha ?? null,
      notePath,
      worktreePath: this.task?.worktreePath ?? null,
      runs: this.runs.length,
      metaCalls: this.metaCalls,
      usage,
      durationMs: finishedAt - this.startedAt,
      exitCode: stop.exitCode,
      error: record.error,
    };
    this.emit({ type: 'task_finished', summary });
    return summary;
  }
}
