/**
 * Events of a project (a PRD split into subtasks). A subtask's own task events are passed on unchanged with
 * its id added (`subtask`); these are the project's own: the plan, why a subtask waits, its state, the
 * review, each merge, the combined DoD and the fix-ups. They drive the progress lines, `--json` and the
 * project's journal.
 */
import type { StampedEvent } from '../core/events.js';
import type { DodOutcome, Plan, TaskSummary, Usage } from '../core/types.js';
import type { ReviewFinding } from '../protocol/review.js';
import type { SubtaskState } from './scheduler.js';

/** One subtask as planned: the protocol's fields in the core's words. */
export interface PlannedSubtask {
  id: string;
  title: string;
  prd: string;
  plan: Plan;
  writeScope: string[];
  readScope: string[];
  blockedBy: string[];
}

/** A reviewer's verdict on one attempt of a subtask. */
export interface ReviewVerdict {
  verdict: 'ok' | 'ng';
  summary: string;
  findings: ReviewFinding[];
}

export type ProjectEvent =
  | {
      type: 'project_started';
      taskId: string;
      branch: string;
      baseSha: string;
      max: number;
      subtasks: PlannedSubtask[];
      prd: string;
      prdPath: string;
    }
  | { type: 'project_plan'; usage: Usage; split: boolean }
  | {
      type: 'subtask_state';
      subtask: string;
      state: SubtaskState;
      attempt: number;
      taskId: string;
      reason?: string;
    }
  | { type: 'subtask_waiting'; subtask: string; kind: string; reason: string }
  | { type: 'subtask_finished'; subtask: string; taskId: string; summary: TaskSummary }
  | { type: 'review'; subtask: string; taskId: string; review: ReviewVerdict; usage: Usage }
  | {
      type: 'replan';
      subtask: string;
      attempt: number;
      reason: string;
      plan: Plan;
      /** The subtask's PRD for the new attempt (the old one plus why it was not merged). */
      prd: string;
      usage: Usage;
    }
  | {
      type: 'merge';
      subtask: string;
      branch: string;
      status: 'merged' | 'conflict' | 'reverted';
      sha: string;
      files?: string[];
    }
  | { type: 'combined_dod'; subtask: string; headSha: string; dod: DodOutcome }
  | { type: 'fixup'; subtask: string; taskId: string; state: string; reason: string }
  | { type: 'project_finished'; summary: TaskSummary };

/** A subtask's task event, marked with its subtask id. */
export type SubtaskTaskEvent = StampedEvent & { subtask: string };

/** Every event of a run that `run` drives: the project's, its subtasks', or those of a task not split. */
export type StampedProjectEvent = (ProjectEvent & { at: string }) | SubtaskTaskEvent | StampedEvent;
