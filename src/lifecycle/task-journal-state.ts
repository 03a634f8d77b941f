/**
 * Rebuilding a task from its event journal (`.agent-runner/runs/<TASK-ID>/events.jsonl`), for `resume` and
 * `status`. The journal may hold several attempts (run, interrupted, resumed...) and may end mid-run (the
 * runner was killed with -9): the last record of each run wins, facts/DoD/assessment events written after it
 * are laid over it, and a run that started but never finished is reported so the Meta-agent hears of it
 * (journal-resume.ts).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { stampedEventSchema, type StampedEvent, type TaskStartOptions } from '../core/events.js';
import type { TaskState } from '../core/task-state.js';
import type {
  Baseline,
  FollowupSummary,
  MetaDecision,
  Plan,
  RunRecord,
  TaskSummary,
  Usage,
} from '../core/types.js';
import { addUsage, ZERO_USAGE } from '../core/usage.js';
import { EVENTS_FILE, readJournal } from '../notes/event-journal.js';
import type { AuditRecord } from '../identity/audit-entry.js';

/** What the journal says about a task. */
export interface JournalTaskState {
  taskId: string;
  /** From the first `task_started` that recorded them (absent in journals of older versions). */
  options: TaskStartOptions | null;
  branch: string | null;
  baseSha: string | null;
  plan: Plan | null;
  runs: RunRecord[];
  /** The worker thread to continue: the last one any run (finished or not) reported. */
  threadId: string | null;
  metaCalls: number;
  metaUsage: Usage;
  workerUsage: Usage;
  /** Last state the task moved to. */
  lastState: TaskState | null;
  /** The last attempt's summary, when that attempt ended (null: it is running, or the runner died). */
  finished: TaskSummary | null;
  /** A worker run that started and never finished (the runner died during it). */
  unfinishedRun: { run: number; mode: string; startedAt: string } | null;
  attempts: number;
  events: number;
  /** When the task's first event was written: when it was created, the board's order. */
  firstEventAt: string | null;
  lastEventAt: string | null;
  /** Wall clock the attempts used, from each `task_started` to that attempt's last event. */
  elapsedMs: number;
  /** Questions the person answered (`ask_human` on a terminal): a resumed task must not ask them again. */
  answers: { question: string; answer: string }[];
  /** The DoD on the base the first attempt ran (absent: none ran, or a journal of an older version). */
  baseline: Baseline | null;
  /** Who started, answered, stopped or resumed the task through a server, oldest first. */
  audit: AuditRecord[];
  /** The latest follow-up (`agent-runner followup`), null when there was none. */
  followup: JournalFollowup | null;
  /** Every follow-up, oldest first: its number, the person's instruction (redacted), when, how it ended. */
  followups: FollowupLine[];
}

/** One follow-up as the task's page lists it. */
export interface FollowupLine {
  number: number;
  /** The person's instruction as the journal keeps it (forge or person text: shown as text, never markup). */
  instruction: string;
  at: string;
  /** The state its attempt ended in; null while it runs (or its runner died). */
  state: TaskState | null;
}

/** A follow-up as the journal tells it: what began it, its revision of the plan, the spending before it. */
export interface JournalFollowup extends FollowupSummary {
  /** Its revised plan was recorded (false: it was interrupted before, and the revision is asked again). */
  planned: boolean;
  /** Wall clock the task used before the follow-up: its own limit does not count it. */
  elapsedBefore: number;
}

/** Folds journal events into the task's state. Pure. */
export function foldJournal(taskId: string, events: readonly StampedEvent[]): JournalTaskState {
  const fold = new JournalFold(taskId);
  for (const event of events) fold.apply(event);
  return fold.result();
}

/** A run the runner died in, as far as its `worker_started` tells: it has no result. */
function unfinishedRecord(
  event: { run: number; mode: string; at: string },
  decision: MetaDecision | null,
): RunRecord {
  return {
    index: event.run,
    decision: decision ?? { action: 'run_worker', reason: '(unknown)', usedPatterns: [] },
    startedAt: Date.parse(event.at),
    durationMs: 0,
    mode: event.mode === 'resume' ? 'resume' : 'exec',
    exitCode: -1,
    timedOut: false,
    failed: true,
    threadId: null,
    commands: [],
    finalMessage: null,
    errors: ['agent-runner stopped during this run (killed or crashed); the run has no result'],
    usage: ZERO_USAGE,
    refusals: [],
  };
}

/**
 * The fold's running state: the task's, the runs recorded so far, the run in progress, the attempt's clock.
 * Events can be applied after a `result()` (a journal that grew: only its new lines are folded).
 */
export class JournalFold {
  private readonly state: JournalTaskState;
  private readonly records = new Map<number, RunRecord>();
  private lastDecision: MetaDecision | null = null;
  /** The run in progress, as far as its events tell: a crash leaves it without worker_finished/run_recorded. */
  private pending: RunRecord | null = null;
  private attemptStartedAt: number | null = null;
  private attemptLastAt: number | null = null;

  constructor(taskId: string) {
    this.state = {
      taskId,
      options: null,
      branch: null,
      baseSha: null,
      plan: null,
      runs: [],
      threadId: null,
      metaCalls: 0,
      metaUsage: ZERO_USAGE,
      workerUsage: ZERO_USAGE,
      lastState: null,
      finished: null,
      unfinishedRun: null,
      attempts: 0,
      events: 0,
      firstEventAt: null,
      lastEventAt: null,
      elapsedMs: 0,
      answers: [],
      baseline: null,
      audit: [],
      followup: null,
      followups: [],
    };
  }

  apply(event: StampedEvent): void {
    const { state } = this;
    // A server's record of who acted on the task: not the task's own progress (no clock, no count).
    if (event.type === 'audit') {
      const { type: _type, ...record } = event;
      state.audit.push(record);
      return;
    }
    state.events += 1;
    state.firstEventAt ??= event.at;
    state.lastEventAt = event.at;
    this.clock(event);
    switch (event.type) {
      case 'task_started':
        this.settlePending();
        state.attempts += 1;
        state.finished = null;
        state.options ??= event.options ?? null;
        state.branch = event.branch;
        state.baseSha = event.baseSha;
        break;
      case 'transition':
        state.lastState = event.to;
        break;
      case 'baseline':
        state.baseline ??= { baseSha: event.baseSha, dod: event.dod };
        break;
      case 'plan':
        state.plan = event.plan;
        if (state.followup) state.followup.planned = true;
        this.countMeta(event.usage);
        break;
      case 'followup_started':
        this.startFollowup(event);
        state.followups.push({
          number: event.number,
          instruction: event.instruction,
          at: event.at,
          state: null,
        });
        break;
      case 'followup_planned':
        if (state.followup?.number === event.number) state.followup.changes = event.changes;
        break;
      case 'decision':
        this.countMeta(event.usage);
        this.lastDecision = event.decision;
        break;
      case 'worker_started':
        this.settlePending();
        state.unfinishedRun = { run: event.run, mode: event.mode, startedAt: event.at };
        this.pending = unfinishedRecord(event, this.lastDecision);
        break;
      case 'worker_event':
        this.workerEvent(event);
        break;
      case 'human':
        if (event.answer !== null) state.answers.push({ question: event.question, answer: event.answer });
        break;
      case 'worker_finished':
      case 'task_finished':
        if (event.type === 'task_finished') {
          state.finished = event.summary;
          const last = state.followups.at(-1);
          if (last && last.state === null) last.state = event.summary.state;
        }
        state.unfinishedRun = null;
        this.pending = null;
        break;
      default:
        this.runPart(event);
    }
  }

  /** Each attempt's wall clock runs from its `task_started` to its last event. */
  private clock(event: StampedEvent): void {
    const at = Date.parse(event.at);
    // A follow-up starts a new stretch of the clock: the time between the end and it is nobody's.
    if (event.type === 'task_started' || event.type === 'followup_started') this.settleAttempt();
    if (Number.isFinite(at)) {
      this.attemptStartedAt ??= at;
      this.attemptLastAt = at;
    }
  }

  /** What the worker reported during the run in progress: its thread, its commands. */
  private workerEvent(event: Extract<StampedEvent, { type: 'worker_event' }>): void {
    const { pending } = this;
    if (event.event.kind === 'thread_started') {
      this.state.threadId = event.event.threadId;
      if (pending) pending.threadId = event.event.threadId;
    } else if (event.event.kind === 'command_finished' && pending) {
      pending.commands.push({
        command: event.event.command,
        exitCode: event.event.exitCode,
        status: event.event.status,
        outputTail: '',
      });
    } else if (event.event.kind === 'command_started' && pending) {
      pending.durationMs = Math.max(0, Date.parse(event.at) - pending.startedAt);
    }
  }

  /** A run's record, and the facts, DoD, checks and assessment written after it (laid over it). */
  private runPart(event: StampedEvent): void {
    if (event.type === 'run_recorded') {
      // A later record of the same run (with facts, DoD, assessment) replaces the earlier one.
      this.records.set(event.run, structuredClone(event.record));
      if (event.record.threadId) this.state.threadId = event.record.threadId;
      return;
    }
    if (event.type === 'assessment') this.countMeta(event.usage);
    if (!('run' in event)) return;
    const record = this.records.get(event.run);
    if (!record) return;
    if (event.type === 'assessment') record.assessment = event.assessment;
    else if (event.type === 'facts') record.facts = event.facts;
    else if (event.type === 'dod') record.dod = event.dod;
    else if (event.type === 'criteria_checks') record.criteriaChecks = event.results;
  }

  /** A follow-up begins: the task's plan is revised next, and its spending so far becomes the "before". */
  private startFollowup(event: Extract<StampedEvent, { type: 'followup_started' }>): void {
    const { type: _type, at: _at, ...started } = event;
    this.settlePending();
    this.state.followup = { ...started, planned: false, elapsedBefore: this.state.elapsedMs };
  }

  private countMeta(usage: Usage | undefined): void {
    this.state.metaCalls += 1;
    if (usage) this.state.metaUsage = addUsage(this.state.metaUsage, usage);
  }

  /** A run the runner died in counts as a run (it consumed an iteration, and its thread can be resumed). */
  private settlePending(): void {
    if (this.pending && !this.records.has(this.pending.index))
      this.records.set(this.pending.index, this.pending);
    this.pending = null;
  }

  private settleAttempt(): void {
    if (this.attemptStartedAt !== null && this.attemptLastAt !== null)
      this.state.elapsedMs += Math.max(0, this.attemptLastAt - this.attemptStartedAt);
    this.attemptStartedAt = null;
    this.attemptLastAt = null;
  }

  /** The task's state as the events so far tell (a copy: folding on does not change it). */
  result(): JournalTaskState {
    const records = new Map(this.records);
    // A run the runner died in counts, and the attempt's clock runs to its last event (as settled when folded on).
    if (this.pending && !records.has(this.pending.index)) records.set(this.pending.index, this.pending);
    const openAttempt =
      this.attemptStartedAt !== null && this.attemptLastAt !== null
        ? Math.max(0, this.attemptLastAt - this.attemptStartedAt)
        : 0;
    const runs = [...records.values()].sort((left, right) => left.index - right.index);
    const workerUsage = runs.reduce((sum, run) => addUsage(sum, run.usage), ZERO_USAGE);
    return structuredClone({
      ...this.state,
      elapsedMs: this.state.elapsedMs + openAttempt,
      runs,
      workerUsage,
    });
  }
}

/** The journal file of a task. */
export function journalPath(runDir: string): string {
  return path.join(runDir, EVENTS_FILE);
}

/** Reads and folds a task's journal; null when the task has none. */
export function readTaskJournal(runDir: string, taskId: string): JournalTaskState | null {
  const file = journalPath(runDir);
  if (!existsSync(file)) return null;
  // Validated line by line: a damaged journal fails here with its line and field, never as a wrong state.
  return foldJournal(taskId, readJournal(file, stampedEventSchema));
}
