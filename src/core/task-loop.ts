/**
 * The state one task's loop carries from step to step, and the plumbing every step shares: recording events
 * (a listener that cannot record stops the task), moving the state machine, the limits, the signals and the
 * Meta-agent's view. The steps themselves live in their own modules (start-up, worker run, validation,
 * finish); each returns what happens next.
 */
import { AgentRunnerError, EnvironmentError } from '../errors.js';
import type { PatternLibrary } from '../patterns/pattern-library.js';
import type { RunnerEvent, StampedEvent, TaskStartOptions, WrittenNote } from './events.js';
import type { Ledger } from './ledger.js';
import type { Limits } from './limits.js';
import type { TaskOutcome } from './outcome.js';
import type {
  AssessmentEvidence,
  CheckBounds,
  Clock,
  GivenPlan,
  HumanPort,
  MemoryBankPort,
  MetaAgentPort,
  MetaView,
  NoteStorePort,
  PlanHandedOff,
  PreparedTask,
  SandboxProviderPort,
  TaskWorkspacePort,
  WorkerAdapter,
  WorkerPromptPort,
} from './ports.js';
import type { MemoryBankView } from '../memory/memory-view.js';
import type { TaskRecord } from './task-record.js';
import { transition, type TaskEvent, type TaskState } from './task-state.js';
import type {
  Assessment,
  Baseline,
  FollowupPlanChanges,
  FollowupSummary,
  MetaDecision,
  Plan,
  RunRecord,
  Usage,
} from './types.js';
import type { RedBasePolicy } from './baseline.js';
import type { PriceTable } from './usage.js';
import { timeoutSignal } from './timeout-signal.js';

/** One worker a task may run. */
export interface WorkerOptions {
  type: string;
  model: string;
  timeoutMs: number;
}

/** The options of worker `type` (the default's when it is not one of the others). */
export function workerOptions(options: TaskRunnerOptions, type: string | undefined): WorkerOptions {
  return options.worker.others?.find((other) => other.type === type) ?? options.worker;
}

export interface TaskRunnerOptions {
  taskId: string;
  prd: string;
  limits: Limits;
  /**
   * The default worker, and the others the Meta-agent may choose (`others`: each with its own model and time
   * limit; the grace period is the default's).
   */
  worker: WorkerOptions & {
    graceMs: number;
    others?: readonly WorkerOptions[];
  };
  prices: PriceTable;
  dodSkipped: boolean;
  /** `dod.baseline` and `dod.redBase` (src/core/baseline.ts); absent: no baseline. */
  baseline?: { mode: 'auto' | 'off'; redBase: RedBasePolicy };
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
    /** The baseline the first attempt recorded: a resumed task compares with it, never runs it again. */
    baseline?: Baseline;
  };
  /** Recorded in `task_started` so `resume` can start the task again the same way. */
  startOptions?: TaskStartOptions;
  /**
   * A plan made outside the task, arriving while it prepares (parallel work: the planner's answer for one
   * task, or a subtask's criteria): `plan_task` is not asked; the plan is emitted (and journalled) as if it
   * had been. A rejection ends the task FAILED with its error, as when its own `plan_task` fails (the
   * workspace the note names is prepared first). `handedOff` (the planner split the work) stops the task
   * before anything ran in its sandbox: `TaskRunner.runOrHandOff` returns the prepared task, no note is
   * written. Ignored with `previous`.
   */
  givenPlan?: Promise<GivenPlan | PlanHandedOff>;
  /**
   * A follow-up of an ended task (src/core/followup.ts), with `previous`: the task continues on its branch with
   * the person's instruction; its limits count what `previous` says was spent since the follow-up began.
   * `stage`: `new` (recorded, then the plan revised), `unplanned` (an interrupted follow-up whose plan was not
   * revised yet: revised now), `planned` (`previous.plan` is the revised plan).
   */
  followup?: FollowupSummary & { stage: 'new' | 'unplanned' | 'planned' };
}

export interface TaskRunnerDeps {
  meta: MetaAgentPort;
  workspace: TaskWorkspacePort;
  sandboxes: SandboxProviderPort;
  worker: WorkerAdapter;
  human: HumanPort;
  notes: NoteStorePort;
  /** The memory bank (absent: none is read, and the workers' instructions files are left alone). */
  memoryBank?: MemoryBankPort;
  workerPrompt: WorkerPromptPort;
  clock: Clock;
  /** Writes the task's note; returns where, and the digest memory will check it by. */
  writeNote(record: TaskRecord): Promise<WrittenNote>;
  onEvent?: (event: StampedEvent) => void;
  /**
   * The task's ledger, shared with its gateway (and spending from its project's, for a subtask). Default: a
   * ledger of `options.limits` of its own ({@link taskLedger}).
   */
  ledger?: Ledger;
}

/** The latest validation's evidence, keyed by the facts it ran on and fingerprinted for the assessment. */
export type Evidence = AssessmentEvidence & { factsKey: string; fingerprint: string };

/** An error whose cause chain says the disk is full: the task stops with `disk_full` (exit 4), not a bug. */
export function diskFullError(error: unknown, runDir: string): EnvironmentError | null {
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

/** The least time an observation (replay and facts) gets, even when the wall clock is spent. */
export const OBSERVE_MIN_MS = 10_000;

/** A decision asked before the task was ready to take it; `abort` when it will not be taken. */
export interface EarlyDecision {
  answer: Promise<{ decision: MetaDecision; usage: Usage }>;
  /** Stops the call, or counts what it spent when it had answered already; never throws. */
  discard(): Promise<void>;
}

export class TaskLoop {
  state: TaskState = 'PENDING';
  plan: Plan | null = null;
  task: PreparedTask | null = null;
  sandboxId: string | null = null;
  readonly runs: RunRecord[] = [];
  readonly feedback: string[] = [];
  memory: MetaView['memory'] = [];
  /** The memory bank as read at the start; null: none read. */
  memoryBank: MemoryBankView | null = null;
  /** The memory bank's section of the prompts ('' without active entries). */
  get decisions(): string {
    return this.memoryBank?.section ?? '';
  }
  /** The latest session of each worker type, for `resume` (a session continues only with its own worker). */
  readonly threads = new Map<string, string>();
  question: string | null = null;
  preservedRef: string | null = null;
  startedAt = 0;
  /** Set when an event could not be recorded (the journal's disk is full...): the task stops with it. */
  fatal: AgentRunnerError | null = null;
  readonly fatalAbort = new AbortController();
  /** A worker ran since the last observation: its commits may not be on the task branch yet. */
  unobservedRun: number | null = null;
  /**
   * An observation was cut (Ctrl-C, SIGTERM, the wall clock): the finish does not start the replay again, the
   * commits stay in the sandbox repository for `resume`.
   */
  observationCut = false;
  /** The latest validation of this attempt, and whether a worker ran since (then checks run again). */
  evidence: Evidence | null = null;
  workerRanSinceEvidence = false;
  /** An assessment made when no worker run exists to hold it (a validation before any run). */
  looseAssessment: { assessment: Assessment; fingerprint: string } | null = null;
  /** The DoD on the base before any change (this attempt's, or the first attempt's on resume). */
  baseline: Baseline | null = null;
  /**
   * The first decision, asked as soon as the plan was known while the sandbox was still being prepared
   * (task-startup.ts): the first step takes it instead of asking again. Its view is the one the first step
   * would send (the plan, the PRD, the memory; nothing of the sandbox).
   */
  firstDecision: EarlyDecision | null = null;
  /** How the follow-up under way revised the plan (absent: no follow-up, or not revised yet). */
  followupChanges: FollowupPlanChanges | null = null;

  constructor(
    readonly options: TaskRunnerOptions,
    readonly deps: TaskRunnerDeps,
    readonly ledger: Ledger,
  ) {
    const previous = options.previous;
    this.followupChanges = options.followup?.changes ?? null;
    if (previous) {
      // A follow-up whose plan is still to be revised asks for it (the earlier plan is what it revises).
      if (options.followup?.stage !== 'new' && options.followup?.stage !== 'unplanned')
        this.plan = previous.plan;
      this.runs.push(...previous.runs);
      const typeOf = (run: RunRecord | undefined) =>
        workerOptions(options, run?.workerType ?? run?.decision.workerCall?.workerType).type;
      for (const run of previous.runs) if (run.threadId) this.threads.set(typeOf(run), run.threadId);
      // The journal's latest thread (a run cut before its record was written) belongs to the last run's worker.
      if (previous.threadId) this.threads.set(typeOf(previous.runs.at(-1)), previous.threadId);
      if (previous.feedback) this.feedback.push(...previous.feedback);
    }
  }

  /** Runs of the task before the follow-up under way: its history, not its own runs nor its budget. */
  get runsBefore(): number {
    return this.options.followup?.earlier.runs ?? 0;
  }

  /** The runs of this follow-up (every run of a task that is no follow-up). */
  ownRuns(): RunRecord[] {
    return this.runs.filter((run) => run.index > this.runsBefore);
  }

  /** The latest run a validation belongs to: never one of before the follow-up under way. */
  currentRun(): RunRecord | undefined {
    return this.ownRuns().at(-1);
  }

  /** The limit reached (or the interrupt, or the recording failure) that ends the task now, if any. */
  limitReached(signal?: AbortSignal): TaskOutcome | null {
    if (this.fatal) return { code: 'error', error: this.fatal };
    if (signal?.aborted) return { code: 'interrupted' };
    const limit = this.ledger.exhausted();
    return limit ? { code: 'limit', limit } : null;
  }

  /**
   * A disk cap of the sandbox, once reached (its processes were stopped at once): asked after every worker
   * run and every round of checks, which are what write there.
   */
  async diskLimit(): Promise<TaskOutcome | null> {
    const reached = (await this.deps.sandboxes.checkDisk?.()) ?? null;
    return reached ? { code: 'limit', limit: reached } : null;
  }

  /** The wall-clock limit as an outcome (a call or a check cut by it ends like the limit itself). */
  wallClockOutcome(): TaskOutcome {
    const limit = this.ledger.exhausted();
    return {
      code: 'limit',
      limit:
        limit?.code === 'wall_clock' ? limit : { code: 'wall_clock', limitMs: this.options.limits.wallClock },
    };
  }

  /** The signal of one Meta-agent call: Ctrl-C, a fatal recording error, or the end of the wall clock. */
  callSignal(signal?: AbortSignal): AbortSignal {
    const left = this.ledger.remainingMs();
    const clock = Number.isFinite(left) ? [timeoutSignal(left)] : [];
    return AbortSignal.any([...clock, ...(signal ? [signal] : [])]);
  }

  /**
   * The signal of one observation (the replay of the worker's commits, then the facts): Ctrl-C, SIGTERM, a fatal
   * recording error, or the wall clock left, but never less than {@link OBSERVE_MIN_MS}, so that the commits of a
   * run that used up the clock still come back when there are few of them.
   */
  observeSignal(signal?: AbortSignal): AbortSignal {
    const left = Math.max(OBSERVE_MIN_MS, this.ledger.remainingMs());
    const clock = Number.isFinite(left) ? [timeoutSignal(left)] : [];
    return AbortSignal.any([...clock, ...(signal ? [signal] : [])]);
  }

  /** Bounds of the checks of one validation: Ctrl-C and the wall clock left. */
  bounds(signal?: AbortSignal): CheckBounds {
    const left = this.ledger.remainingMs();
    return {
      signal: this.callSignal(signal),
      timeoutMs: Number.isFinite(left) ? Math.max(1000, left) : 24 * 3_600_000,
    };
  }

  view(plan = this.plan): MetaView {
    if (!plan) throw new Error('no plan yet');
    return {
      taskId: this.options.taskId,
      prd: this.options.prd,
      plan,
      history: this.runs,
      feedback: [...this.feedback],
      patterns: this.options.patterns.list().map(({ name, description }) => ({ name, description })),
      memory: this.memory,
      ...(this.decisions ? { decisions: this.decisions } : {}),
      ...(this.evidence ? { latest: this.evidence } : {}),
      ...(this.options.followup
        ? {
            followup: {
              number: this.options.followup.number,
              instruction: this.options.followup.instruction,
            },
          }
        : {}),
    };
  }

  move(event: TaskEvent): void {
    const from = this.state;
    this.state = transition(from, event);
    const reason =
      'reason' in event ? event.reason : 'reasons' in event ? event.reasons.join('; ') : undefined;
    this.emit({ type: 'transition', from, to: this.state, ...(reason ? { reason } : {}) });
  }

  emit(event: RunnerEvent): void {
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

  /** A run's record changed: the journal keeps its latest form. */
  recordRun(record: RunRecord): void {
    this.emit({ type: 'run_recorded', run: record.index, record: structuredClone(record) });
  }
}
