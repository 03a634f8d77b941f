/**
 * What starting a task takes: a small specification of what to do ({@link TaskSpec}) and hooks for how to
 * report ({@link TaskHooks}). Every way a task starts (`run`, `resume`, a project's subtask, and next a
 * server) builds these two and calls the same `runTask`; what a caller needs afterwards comes back in the
 * {@link TaskResult}, never from listening to events.
 */
import type { Config } from '../config/schema.js';
import type { StampedEvent } from '../core/events.js';
import type { Ledger } from '../core/ledger.js';
import type { GivenPlan, HumanPort, PlanHandedOff } from '../core/ports.js';
import type { TaskRunnerOptions } from '../core/task-runner.js';
import type { DodOutcome, TaskSummary } from '../core/types.js';

export type { GivenPlan, PlanHandedOff } from '../core/ports.js';

/** An earlier, interrupted attempt of the task, rebuilt from its journal. */
export type PreviousAttempt = NonNullable<TaskRunnerOptions['previous']>;

/** A follow-up of an ended task: its instruction, the criteria it starts from, and how far it got. */
export type FollowupStart = NonNullable<TaskRunnerOptions['followup']>;

/** How the task begins. */
export type TaskStart =
  /** A new task: the Meta-agent plans it. */
  | { kind: 'new' }
  /**
   * A new task whose plan is made outside it, while the task prepares: a rejected promise ends the task FAILED
   * with its error; `handedOff` (the planner split the work) ends it unrun (see `ComposedTask.runOrHandOff`).
   */
  | { kind: 'planned'; plan: Promise<GivenPlan | PlanHandedOff> }
  /**
   * `resume`: continue from an earlier attempt; `attempt` is this one's number (a replay answers from it).
   * `followup`: the attempt belongs to a follow-up (`agent-runner followup`, or `resume` of one).
   */
  | { kind: 'resume'; previous: PreviousAttempt; attempt: number; followup?: FollowupStart };

/** Where the model calls go besides the configured endpoints (the demo, record and replay). */
export interface ModelSource {
  /** `--model-script FILE`: a scripted model served by agent-runner itself. */
  script?: string;
  /** `--record FILE`: store every model exchange in a cassette. */
  record?: string;
  /** `--replay FILE`: answer every model call from a cassette, with no upstream. */
  replay?: string;
}

/** What to do. */
export interface TaskSpec {
  repoRoot: string;
  taskId: string;
  prd: string;
  prdPath: string;
  /** Base of the task branch (default HEAD). */
  base?: string;
  config: Config;
  env: NodeJS.ProcessEnv;
  dodSkipped: boolean;
  keepSandbox: boolean;
  start: TaskStart;
  models?: ModelSource;
  /** A project's subtask spends from the project's ledger as it goes (its calls, tokens and cost). */
  parent?: Ledger;
}

/** How to report. Each is optional: a task with no hooks runs headless and silent (its journal and note). */
export interface TaskHooks {
  onEvent?: (event: StampedEvent) => void;
  /** One-line notices for the person (orphaned containers removed, a stale lock taken over). */
  onNotice?: (text: string) => void;
  /** The sandbox was kept (`--keep-sandbox`); `execUser` is the worker's `uid:gid` to enter it as. */
  onKept?: (sandboxId: string, execUser: string) => void;
  /** Answers ask_human; absent: headless (the task ends NEEDS_REVIEW with the question). */
  human?: HumanPort;
  /** Ctrl-C: stop the worker, save its work, write the note. */
  signal?: AbortSignal;
  /** A second Ctrl-C: the worker's processes are killed at once instead of after the grace. */
  hurry?: AbortSignal;
}

/** What a task leaves its caller. */
export interface TaskResult {
  summary: TaskSummary;
  /** The last Definition-of-Done outcome, when one ran. */
  dod?: DodOutcome;
  /** The last worker run's final message, when one ran and said something. */
  workerSummary?: string;
}
