/**
 * The AgentRunner loop. Imports ports only: the Meta-agent decides, the worker works in the sandbox, and the
 * runner decides completion from facts it observes itself. Every terminal path writes the note and stops
 * the sandbox.
 */
import { AgentRunnerError, EnvironmentError, EXIT_CODES } from '../errors.js';
import type { PatternLibrary } from '../patterns/pattern-library.js';
import { completionRefusals, decisionBasis, onlyEvidenceMissing, type GateInput } from './completion-gate.js';
import { evidenceFingerprint, factsFingerprint } from './evidence-fingerprint.js';
import type { RunnerEvent, StampedEvent, TaskStartOptions } from './events.js';
import type {
  AssessmentEvidence,
  CheckBounds,
  Clock,
  GivenPlan,
  PlanHandedOff,
  HumanPort,
  MetaAgentPort,
  MetaView,
  NoteStorePort,
  PreparedTask,
  SandboxProviderPort,
  SharedMetaCalls,
  TaskWorkspacePort,
  WorkerAdapter,
  WorkerPromptPort,
} from './ports.js';
import { startSandboxSession } from './sandbox-session.js';
import { StallCounter, stallDescription } from './stall.js';
import {
  criteriaEvidence,
  lastAssessment,
  lastRecordedEvidence,
  summaryOf,
  type TaskRecord,
} from './task-record.js';
import { transition, type TaskEvent, type TaskState } from './task-state.js';
import type { Assessment, MetaDecision, Plan, RunRecord, TaskSummary, Usage } from './types.js';
import { limitMessage, usageReached, type LimitReason, type Limits } from './limits.js';
import { addUsage, costOf, ZERO_USAGE, type PriceTable } from './usage.js';

export interface TaskRunnerOptions {
  taskId: string;
  prd: string;
  limits: Limits;
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
    /** Wall clock the earlier attempts already used (from the journal): the task's limit covers them all. */
    elapsedMs?: number;
  };
  /** Recorded in `task_started` so `resume` can start the task again the same way. */
  startOptions?: TaskStartOptions;
  /**
   * A plan made outside the task, arriving while it prepares (parallel work: the planner's answer for one
   * task, or a subtask's criteria): `plan_task` is not asked; the plan is emitted (and journalled) as if it
   * had been. A rejection ends the task FAILED with its error, as when its own `plan_task` fails (the
   * workspace the note names is prepared first). `handedOff` (the planner split the work) stops the task
   * before anything ran in its sandbox: {@link TaskRunner.runOrHandOff} returns the prepared task, no note is
   * written. Ignored with `previous`.
   */
  givenPlan?: Promise<GivenPlan | PlanHandedOff>;
}

export type { TaskRecord } from './task-record.js';

export interface TaskRunnerDeps {
  meta: MetaAgentPort;
  workspace: TaskWorkspacePort;
  sandboxes: SandboxProviderPort;
  worker: WorkerAdapter;
  human: HumanPort;
  notes: NoteStorePort;
  workerPrompt: WorkerPromptPort;
  clock: Clock;
  writeNote(record: TaskRecord): Promise<string>;
  onEvent?: (event: StampedEvent) => void;
  /** The project's Meta-agent call count, when this task is one of its subtasks. */
  sharedMetaCalls?: SharedMetaCalls;
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

/** The planner split the work while this task prepared: it ends here, unrun (see `givenPlan`). */
class HandOff extends Error {}

/** What {@link TaskRunner.runOrHandOff} ends with. */
export type TaskRunResult =
  { kind: 'finished'; summary: TaskSummary } | { kind: 'handed_off'; task: PreparedTask | null };

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
  /** Wall-clock deadline of the whole task (earlier attempts included). */
  private deadline = Number.POSITIVE_INFINITY;
  /** The latest validation of this attempt, and whether a worker ran since (then checks run again). */
  private evidence: (AssessmentEvidence & { factsKey: string; fingerprint: string }) | null = null;
  private workerRanSinceEvidence = false;
  /** An assessment made when no worker run exists to hold it (a validation before any run). */
  private looseAssessment: { assessment: Assessment; fingerprint: string } | null = null;
  private readonly stalls = new StallCounter();

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
    const result = await this.runOrHandOff(outerSignal);
    if (result.kind === 'handed_off') throw new Error('the task was handed off; use runOrHandOff');
    return result.summary;
  }

  /** As {@link run}, or `handed_off` when the plan given from outside split the work. */
  async runOrHandOff(outerSignal?: AbortSignal): Promise<TaskRunResult> {
    this.startedAt = this.deps.clock.now();
    this.deadline = this.startedAt + this.options.limits.wallClock - (this.options.previous?.elapsedMs ?? 0);
    // A fatal recording error stops the worker like an interrupt does, but ends the task FAILED with it.
    const signal = outerSignal
      ? AbortSignal.any([outerSignal, this.fatalAbort.signal])
      : this.fatalAbort.signal;
    let stop: Stop;
    let error: AgentRunnerError | null = null;
    try {
      stop = await this.loop(signal);
    } catch (caught) {
      // Nothing ran in the sandbox (a set-up that finished first is all): it goes; no note, no terminal state.
      if (caught instanceof HandOff && !this.fatal) {
        if (this.sandboxId) await this.deps.sandboxes.stop(this.sandboxId).catch(() => undefined);
        return { kind: 'handed_off', task: this.task };
      }
      const fatal =
        this.fatal ?? (caught instanceof Stop ? null : diskFullError(caught, this.options.runDir));
      if (fatal) {
        error = fatal;
        stop = new Stop('FAILED', fatal.message, fatal.exitCode);
      } else if (caught instanceof Stop) stop = caught;
      else if (signal.aborted) stop = new Stop('NEEDS_REVIEW', 'interrupted', EXIT_CODES.interrupted);
      // A Meta-agent call or a check cut by the wall clock ends like the limit itself.
      else if (this.deps.clock.now() >= this.deadline) stop = this.wallClockStop();
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
    return { kind: 'finished', summary: await this.finish(stop, error) };
  }

  private async loop(signal?: AbortSignal): Promise<Stop> {
    this.move({ type: 'start' });
    this.memory = await this.deps.notes.readMemory(this.options.taskId);
    await this.planWhilePreparing(signal);
    this.move({ type: 'planned' });
    // After a resume, the work already there is observed first: the Meta-agent decides on today's facts.
    if (this.options.previous) {
      this.checkLimits(signal);
      await this.observeAndCheck(signal);
    }

    for (;;) {
      this.checkLimits(signal);
      const { decision, usage } = await this.deps.meta.nextAction(this.view(), this.callSignal(signal));
      this.countMeta(usage);
      this.emit({ type: 'decision', decision, usage });
      this.feedback.length = 0;
      let refusals: string[] = [];
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
          refusals = await this.validate(decision, signal);
          break;
        case 'run_worker':
          refusals = await this.runWorker(decision, signal);
          break;
      }
      this.detectStall(decision, refusals);
    }
  }

  /**
   * Planning needs only the PRD, the config and the memory, so the Meta-agent is asked (or the plan given from
   * outside awaited) while the sandbox session prepares the workspace and starts the sandbox. A failure on
   * either side stops the other: a failed preparation aborts the planning request; a failed planning (or a
   * hand-off) keeps the sandbox from being created or set up, and the session removes what it started. Events
   * keep their order: task, sandbox, plan.
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
    const given = this.options.previous ? undefined : this.options.givenPlan;
    const planning: Promise<(GivenPlan & { asked: boolean }) | null> = this.plan
      ? Promise.resolve(null)
      : (given
          ? given.then((answer) => {
              if ('handedOff' in answer) throw new HandOff('handed off');
              return { ...answer, asked: false };
            })
          : this.deps.meta
              .plan({
                taskId: this.options.taskId,
                prd: this.options.prd,
                memory: this.memory,
                signal: this.callSignal(planSignal),
              })
              .then((answer) => ({ ...answer, metaCalls: 1, asked: true }))
        ).catch(failed);
    const preparing = startSandboxSession(this.deps.workspace, this.deps.sandboxes, {
      onPrepared: (task) => {
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
      },
      abandoned: () => (first.failed ? { error: first.error } : null),
    })
      .then((session) => {
        this.sandboxId = session.sandboxId;
        this.emit({ type: 'sandbox_started', sandboxId: session.sandboxId });
      })
      .catch((error: unknown) => {
        stopPlanning.abort();
        return failed(error);
      });
    const [planned] = await Promise.allSettled([planning, preparing]);
    if (first.failed) throw first.error;
    if (planned.status === 'fulfilled' && planned.value) {
      const { plan, usage, metaCalls, asked } = planned.value;
      if (asked) this.countMeta(usage);
      else {
        // Made outside the task: counted as the task's own, not again in a project's shared count.
        this.metaCalls += metaCalls;
        this.metaUsage = addUsage(this.metaUsage, usage);
      }
      this.plan = plan;
      this.emit({ type: 'plan', plan, usage });
    }
  }

  /**
   * VALIDATING, for a worker run and for `mark_complete` alike: bring the commits back and observe the facts,
   * run the DoD and the criteria checks, ask for an assessment when the evidence changed since the last one,
   * then apply the completion gate. Returns the refusals (empty never returns: COMPLETE ends the loop).
   */
  private async validate(decision: MetaDecision, signal?: AbortSignal): Promise<string[]> {
    this.move({ type: 'validate' });
    const evidence = await this.observeAndCheck(signal);
    const assessment = await this.assessIfChanged(evidence, signal);
    const gate = this.gateInput(evidence, assessment);
    const refusals = completionRefusals(gate);
    const record = this.runs.at(-1);
    if (refusals.length === 0) {
      if (record) this.emit({ type: 'run_recorded', run: record.index, record: structuredClone(record) });
      const reason = decision.action === 'mark_complete' ? decision.reason : assessment.summary;
      throw new Stop('COMPLETE', reason, EXIT_CODES.complete);
    }
    if (onlyEvidenceMissing(refusals)) {
      // Nothing a worker run can change: no check exists that could ever prove the work.
      throw new Stop('NEEDS_REVIEW', refusals.join('; '), EXIT_CODES.needsReview);
    }
    const reasons =
      decision.action === 'mark_complete' ? [`mark_complete refused: ${refusals.join('; ')}`] : refusals;
    if (record) {
      record.refusals = reasons;
      this.emit({ type: 'run_recorded', run: record.index, record: structuredClone(record) });
    }
    this.refuse(reasons);
    return reasons;
  }

  /** Facts, then the DoD and the criteria checks (reused while nothing changed since they ran). */
  private async observeAndCheck(
    signal?: AbortSignal,
  ): Promise<AssessmentEvidence & { factsKey: string; fingerprint: string }> {
    if (!this.sandboxId || !this.plan) throw new Error('validation without a sandbox or a plan');
    const record = this.runs.at(-1);
    const run = record?.index ?? 0;
    const facts = await this.deps.workspace.observe(this.sandboxId);
    this.unobservedRun = null;
    this.emit({ type: 'facts', run, facts });
    const factsKey = factsFingerprint(facts);
    const previous = this.evidence;
    let { dod, criteriaChecks } =
      previous && previous.factsKey === factsKey && !this.workerRanSinceEvidence
        ? previous
        : { dod: undefined, criteriaChecks: [] as AssessmentEvidence['criteriaChecks'] };
    if (!previous || previous.factsKey !== factsKey || this.workerRanSinceEvidence) {
      if (!this.options.dodSkipped) {
        dod = await this.deps.workspace.runDod(this.sandboxId, facts, this.bounds(signal));
        this.emit({ type: 'dod', run, dod });
      }
      this.checkLimits(signal);
      criteriaChecks = await this.deps.workspace.runCriteriaChecks(
        this.sandboxId,
        this.plan.acceptanceCriteria,
        facts,
        this.bounds(signal),
      );
      this.emit({ type: 'criteria_checks', run, results: [...criteriaChecks] });
    }
    this.checkLimits(signal);
    this.workerRanSinceEvidence = false;
    this.evidence = {
      run: record,
      facts,
      dod,
      criteriaChecks,
      factsKey,
      fingerprint: evidenceFingerprint(facts, dod, criteriaChecks),
    };
    if (record) {
      record.facts = facts;
      if (dod) record.dod = dod;
      record.criteriaChecks = [...criteriaChecks];
      this.emit({ type: 'run_recorded', run, record: structuredClone(record) });
    }
    return this.evidence;
  }

  /** The assessment of this evidence: the last one when it judged the same evidence, else a new call. */
  private async assessIfChanged(
    evidence: AssessmentEvidence & { fingerprint: string },
    signal?: AbortSignal,
  ): Promise<Assessment> {
    const record = this.runs.at(-1);
    const last = record
      ? record.assessment && { assessment: record.assessment, fingerprint: record.assessedEvidence }
      : this.looseAssessment;
    if (last && last.fingerprint === evidence.fingerprint) return last.assessment;
    this.checkLimits(signal);
    const { assessment, usage } = await this.deps.meta.assess(this.view(), evidence, this.callSignal(signal));
    this.countMeta(usage);
    this.emit({ type: 'assessment', run: record?.index ?? 0, assessment, usage });
    if (record) {
      record.assessment = assessment;
      record.assessedEvidence = evidence.fingerprint;
    } else this.looseAssessment = { assessment, fingerprint: evidence.fingerprint };
    return assessment;
  }

  private gateInput(evidence: AssessmentEvidence | null, assessment: Assessment | undefined): GateInput {
    return {
      criteria: this.plan?.acceptanceCriteria ?? [],
      assessment,
      facts: evidence?.facts,
      dod: evidence?.dod,
      criteriaChecks: evidence?.criteriaChecks ?? [],
      dodSkipped: this.options.dodSkipped,
    };
  }

  /**
   * The same refusal, or the same decision with no change in the facts, `limits.maxStalls` times in a row
   * ends the task: a model that repeats itself would otherwise burn the whole budget.
   */
  private detectStall(decision: MetaDecision, refusals: string[]): void {
    const repeats = this.stalls.observe(decision, this.evidence?.fingerprint ?? '', refusals);
    if (repeats < this.options.limits.maxStalls) return;
    const what = stallDescription(decision, repeats, refusals);
    this.emit({ type: 'stalled', repeats, what });
    throw new Stop('NEEDS_REVIEW', `stalled: ${what}`, EXIT_CODES.needsReview);
  }

  private async runWorker(decision: MetaDecision, signal?: AbortSignal): Promise<string[]> {
    const { limits } = this.options;
    if (this.runs.length >= limits.maxIterations)
      throw this.limitStop({ code: 'max_iterations', limit: limits.maxIterations });
    const call = decision.workerCall;
    if (!call || !this.plan || !this.task || !this.sandboxId)
      throw new Error('run_worker without its inputs');
    const patterns = this.options.patterns.resolve(decision.usedPatterns);
    const prompt = this.deps.workerPrompt.render({
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
    this.workerRanSinceEvidence = true;
    const result = await this.deps.worker.run({
      sandboxId: this.sandboxId,
      mode,
      prompt,
      threadId: mode === 'resume' ? (this.threadId ?? undefined) : undefined,
      runDir: `${this.options.runDir}/run-${index}`,
      timeoutMs: Math.max(1000, Math.min(this.options.worker.timeoutMs, this.remaining())),
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
    // The gateway refused the worker's model requests: the budget is spent. finish() still brings the
    // run's commits back and saves its uncommitted work.
    if (result.budgetExhausted)
      throw new Stop('NEEDS_REVIEW', result.budgetExhausted, EXIT_CODES.needsReview);
    return this.validate(decision, signal);
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
    if (this.deps.clock.now() >= this.deadline) throw this.wallClockStop();
    if (this.metaCalls >= limits.maxMetaCalls)
      throw this.limitStop({ code: 'max_meta_calls', limit: limits.maxMetaCalls });
    const shared = this.deps.sharedMetaCalls?.exhausted() ?? null;
    if (shared !== null) throw new Stop('NEEDS_REVIEW', shared, EXIT_CODES.needsReview);
    const spent = usageReached(limits, addUsage(this.metaUsage, this.workerUsage));
    if (spent) throw this.limitStop(spent);
  }

  private limitStop(reason: LimitReason): Stop {
    return new Stop(
      'NEEDS_REVIEW',
      limitMessage(reason),
      reason.code === 'wall_clock' ? EXIT_CODES.timeout : EXIT_CODES.needsReview,
    );
  }

  private wallClockStop(): Stop {
    return this.limitStop({
      code: 'wall_clock',
      limitMs: this.options.limits.wallClock,
      ...(this.options.previous?.elapsedMs ? { earlier: { taskId: this.options.taskId } } : {}),
    });
  }

  /** Wall clock left for the task (earlier attempts counted). */
  private remaining(): number {
    return Math.max(0, this.deadline - this.deps.clock.now());
  }

  /** The signal of one Meta-agent call: Ctrl-C, a fatal recording error, or the end of the wall clock. */
  private callSignal(signal?: AbortSignal): AbortSignal {
    const left = this.remaining();
    const clock = Number.isFinite(left)
      ? [AbortSignal.timeout(Math.max(1, Math.min(left, 2 ** 31 - 1)))]
      : [];
    return AbortSignal.any([...clock, ...(signal ? [signal] : [])]);
  }

  /** Bounds of the checks of one validation: Ctrl-C and the wall clock left. */
  private bounds(signal?: AbortSignal): CheckBounds {
    const left = this.remaining();
    return {
      signal: this.callSignal(signal),
      timeoutMs: Number.isFinite(left) ? Math.max(1000, left) : 24 * 3_600_000,
    };
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
      ...(this.evidence ? { latest: this.evidence } : {}),
    };
  }

  private countMeta(usage: Usage): void {
    this.metaCalls += 1;
    this.deps.sharedMetaCalls?.add();
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
    const assessment = lastAssessment(this.runs, this.looseAssessment?.assessment);
    const latest = this.evidence ?? lastRecordedEvidence(this.runs);
    const basis = decisionBasis(this.gateInput(latest, assessment));
    const criteria = criteriaEvidence(this.plan, latest, assessment);
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
      basis,
      criteria,
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
    const summary = summaryOf(record, {
      notePath,
      exitCode: stop.exitCode,
      headSha: latest?.facts.headSha ?? null,
    });
    this.emit({ type: 'task_finished', summary });
    return summary;
  }
}
