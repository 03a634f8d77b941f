/** What a project's run leaves: each subtask's story, the merge log, and the outcome the note is written from. */
import type { TaskSummary, Usage } from '../core/types.js';
import type { CombinedCheck, PlannedSubtask, ReviewVerdict } from './project-events.js';
import type { SubtaskState } from './scheduler.js';
import { combinedStatus } from './combined-check.js';

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
  /** The combined check of the head this entry left (a `reverted` entry: of the head it went back to). */
  check?: CombinedCheck;
}

/** A fix-up's review: which fix-up (`fixup-N`), after which subtask's merge, and the verdict. */
export interface FixupReview {
  fixup: string;
  subtask: string;
  review: ReviewVerdict;
}

export interface ProjectOutcome {
  state: 'COMPLETE' | 'FAILED' | 'NEEDS_REVIEW';
  reason: string;
  subtasks: SubtaskRecord[];
  merges: MergeLogEntry[];
  /** The fix-ups' reviews, in order (absent: none was reviewed). */
  fixupReviews?: FixupReview[];
  /**
   * The combined check of the integration branch's final head (after a revert, the check of the head that
   * remained); null when nothing merged stayed.
   */
  combined: CombinedCheck | null;
  headSha: string;
  usage: { meta: Usage; worker: Usage; total: Usage };
  metaCalls: number;
}

/**
 * The project's verdict from its subtasks: COMPLETE when every one merged, NEEDS_REVIEW when a limit or an
 * interrupt stopped it (`stopReason`), else FAILED.
 */
export function projectOutcome(
  input: Omit<ProjectOutcome, 'state' | 'reason'> & { stopReason: string | null },
): ProjectOutcome {
  const { subtasks } = input;
  const merged = subtasks.filter((record) => record.state === 'merged').length;
  const base = {
    subtasks,
    merges: input.merges,
    ...(input.fixupReviews?.length ? { fixupReviews: input.fixupReviews } : {}),
    combined: input.combined,
    headSha: input.headSha,
    usage: input.usage,
    metaCalls: input.metaCalls,
  };
  if (merged === subtasks.length) {
    const check = input.combined;
    return {
      ...base,
      state: 'COMPLETE',
      reason: `all ${merged} subtasks merged into the integration branch; combined check ${check ? combinedStatus(check) : 'not run (nothing new merged)'}`,
    };
  }
  const notMerged = subtasks.filter((record) => record.state !== 'merged');
  const detail = notMerged.map((record) => `${record.subtask.id} ${record.state}`).join(', ');
  if (input.stopReason)
    return {
      ...base,
      state: 'NEEDS_REVIEW',
      reason: `${input.stopReason}; ${merged} of ${subtasks.length} merged (${detail})`,
    };
  return {
    ...base,
    state: 'FAILED',
    reason: `${merged} of ${subtasks.length} subtasks merged (${detail})`,
  };
}

/** Each subtask's record when the project starts: those merged by an earlier attempt stay merged. */
export function initialRecords(options: {
  taskId: string;
  subtasks: readonly PlannedSubtask[];
  merged?: readonly string[];
  attempts?: Record<string, number>;
}): SubtaskRecord[] {
  return options.subtasks.map((subtask) => {
    const merged = options.merged?.includes(subtask.id) ?? false;
    const attempt = options.attempts?.[subtask.id] ?? 1;
    return {
      subtask,
      state: merged ? 'merged' : 'waiting',
      attempt,
      taskId: `${options.taskId}--${subtask.id}${attempt > 1 ? `-r${attempt}` : ''}`,
      reason: merged ? 'merged in an earlier attempt' : '',
      attempts: [],
      reviews: [],
      startedAt: null,
      finishedAt: null,
    };
  });
}
