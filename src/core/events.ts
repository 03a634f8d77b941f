/**
 * Typed events of a task: every transition, every Meta-agent call, every worker event, the facts and the
 * DoD results. They drive live progress, `--json` and the run's event journal.
 */
import type { WorkerEvent } from './ports.js';
import type { TaskState } from './task-state.js';
import type { Assessment, DodOutcome, MetaDecision, Plan, TaskFacts, TaskSummary, Usage } from './types.js';

export type RunnerEvent =
  | {
      type: 'task_started';
      taskId: string;
      branch: string;
      baseSha: string;
      worktreePath: string;
      dirtyStart: boolean;
    }
  | { type: 'transition'; from: TaskState; to: TaskState; reason?: string }
  | { type: 'sandbox_started'; sandboxId: string }
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
  | { type: 'facts'; run: number; facts: TaskFacts }
  | { type: 'dod'; run: number; dod: DodOutcome }
  | { type: 'assessment'; run: number; assessment: Assessment; usage: Usage }
  | { type: 'refused'; reasons: string[] }
  | { type: 'human'; question: string; answer: string | null }
  | { type: 'preserved'; ref: string }
  | { type: 'note_written'; path: string }
  | { type: 'task_finished'; summary: TaskSummary };

/** Stamped with the time it happened. */
export type StampedEvent = RunnerEvent & { at: string };

export type EventListener = (event: StampedEvent) => void;
