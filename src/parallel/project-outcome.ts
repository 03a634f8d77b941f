/** What a project's run leaves: each subtask's story, the merge log, and the outcome the note is written from. */
import type { DodOutcome, TaskSummary, Usage } from '../core/types.js';
import type { PlannedSubtask, ReviewVerdict } from './project-events.js';
import type { SubtaskState } from './scheduler.js';

/** One subtask's whole story, for the parent note. */
export interface SubtaskRecord {
  subtask: PlannedSubtask;
  state: SubtaskState;
  attempt: number;
  /** The task id of the current (last) attempt. */
  taskId: string;
  reason: string;
  /** Summaries of every attempt, oldest first. */
  attempts: TaskSummary[];
  reviews: ReviewVerdict[];
  startedAt: number | null;
  finishedAt: number | null;
}

export interface MergeLogEntry {
  subtask: string;
  branch: string;
  status: 'merged' | 'conflict' | 'reverted';
  sha: string;
  files?: string[];
  dod?: DodOutcome;
}

export interface ProjectOutcome {
  state: 'COMPLETE' | 'FAILED' | 'NEEDS_REVIEW';
  reason: string;
  subtasks: SubtaskRecord[];
  merges: MergeLogEntry[];
  /** The last combined DoD, on the integration branch's final head. */
  combinedDod: DodOutcome | null;
  headSha: string;
  usage: { meta: Usage; worker: Usage; total: Usage };
  metaCalls: number;
}
