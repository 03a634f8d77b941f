/**
 * Typed events of a task: every transition, every Meta-agent call, every worker event, the facts and the
 * DoD results. They drive live progress, `--json` and the run's event journal.
 */
import type { WorkerEvent } from './ports.js';
import type { TaskState } from './task-state.js';
import type {
  Assessment,
  CriterionCheckResult,
  DodOutcome,
  MetaDecision,
  Plan,
  RunRecord,
  TaskFacts,
  TaskSummary,
  Usage,
} from './types.js';

/** How the task was started, recorded in `task_started` so `resume` can start it again the same way. */
export interface TaskStartOptions {
  prdPath: string;
  /** The PRD text as it was when the task started (a resumed task keeps working on the same PRD). */
  prd: string;
  base?: string;
  dodSkipped: boolean;
  /** Set on a resumed attempt. */
  resumed?: boolean;
  /** `--keep-sandbox`, `--record FILE`, `--replay FILE`: a resumed attempt keeps them. */
  keepSandbox?: boolean;
  record?: string;
  replay?: string;
}

/** Why the model gateway refused a request (see docs/gateway.md). */
export type GatewayRefusalReason =
  'path' | 'route' | 'token' | 'model' | 'body_too_large' | 'headers_too_large' | 'rate_limit' | 'budget';

/** A request the gateway refused: what was asked (the path clipped, redacted) and why. */
export interface GatewayRefusal {
  /** `worker`: the sandbox's socket; `meta`: the host's loopback route. */
  route: 'worker' | 'meta';
  method: string;
  path: string;
  status: number;
  reason: GatewayRefusalReason;
  detail: string;
}

/** One `sandbox.setup` command: `started` before it runs, `finished` with its result. */
export interface SetupCommandReport {
  /** 1-based position in `sandbox.setup`. */
  index: number;
  command: string;
  /** The network policy it ran under, e.g. `allowlist (registry.npmjs.org)`. */
  policy: string;
  phase: 'started' | 'finished';
  durationMs?: number;
  exitCode?: number;
  timedOut?: boolean;
  /** The end of its output (redacted), on failure only. */
  outputTail?: string;
}

export type RunnerEvent =
  | {
      type: 'task_started';
      taskId: string;
      branch: string;
      baseSha: string;
      worktreePath: string;
      dirtyStart: boolean;
      options?: TaskStartOptions;
    }
  | { type: 'transition'; from: TaskState; to: TaskState; reason?: string }
  | { type: 'sandbox_started'; sandboxId: string }
  | ({ type: 'setup_command' } & SetupCommandReport)
  | { type: 'plan'; plan: Plan; usage: Usage }
  | { type: 'decision'; decision: MetaDecision; usage: Usage }
  | { type: 'worker_started'; run: number; mode: string; prompt: string }
  | { type: 'worker_event'; run: number; event: WorkerEvent }
  | {
      type: 'worker_finished';
      run: number;
      exitCode: number;
      timedOut: boolean;
      failed: boolean;
      durationMs: number;
    }
  /** The whole RunRecord, after the run and again once facts, DoD and assessment are in (resume reads it). */
  | { type: 'run_recorded'; run: number; record: RunRecord }
  | { type: 'facts'; run: number; facts: TaskFacts }
  | { type: 'dod'; run: number; dod: DodOutcome }
  /** The acceptance criteria's checks (run 0: validated before any worker run of this task). */
  | { type: 'criteria_checks'; run: number; results: CriterionCheckResult[] }
  /** The runner stopped a loop that made no progress. */
  | { type: 'stalled'; repeats: number; what: string }
  | { type: 'assessment'; run: number; assessment: Assessment; usage: Usage }
  | { type: 'refused'; reasons: string[] }
  | { type: 'human'; question: string; answer: string | null }
  | { type: 'preserved'; ref: string }
  | { type: 'note_written'; path: string }
  | { type: 'task_finished'; summary: TaskSummary }
  /** Written by the composition root as the gateway refuses a request (at most a bounded number per task). */
  | { type: 'gateway_refused'; refusal: GatewayRefusal };

/** Stamped with the time it happened. */
export type StampedEvent = RunnerEvent & { at: string };

export type EventListener = (event: StampedEvent) => void;
