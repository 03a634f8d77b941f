/**
 * What the reviewer of a fix-up is shown: a fix-up may write anywhere any subtask could, so the review is
 * told, before the diff, which merged subtasks' work it changed (by their write scopes), deletions first: a
 * "repair" that makes the combined tree green by removing a subtask's files is what it must catch. Pure.
 */
import type { DodOutcome, TaskSummary } from '../core/types.js';
import type { FactsForAssessment } from '../meta/meta-context.js';
import { compileGlobs } from '../workspace/scope/glob.js';
import type { FileChange } from './ports.js';
import type { PlannedSubtask } from './project-events.js';

const WORDS: Record<string, string> = {
  A: 'added',
  D: 'deleted',
  M: 'modified',
  R: 'renamed',
  T: 'changed type',
};

/** Paths listed per subtask at most; the rest is counted. */
const LISTED = 20;

/** Per subtask: the fix-up's changes inside its write scope, deletions first. */
export function changedWork(
  changes: readonly FileChange[],
  subtasks: readonly PlannedSubtask[],
): { subtask: string; changes: FileChange[] }[] {
  const rank = (change: FileChange) => (change.status === 'D' ? 0 : change.status === 'R' ? 1 : 2);
  return subtasks
    .map((subtask) => {
      const scope = compileGlobs(subtask.writeScope);
      const touched = changes.filter(
        (change) => scope.matches(change.path) || (change.from !== undefined && scope.matches(change.from)),
      );
      return { subtask: subtask.id, changes: [...touched].sort((a, b) => rank(a) - rank(b)) };
    })
    .filter((entry) => entry.changes.length > 0);
}

function changeText(change: FileChange): string {
  const word = WORDS[change.status] ?? change.status;
  return change.from ? `${word} ${change.from} -> ${change.path}` : `${word} ${change.path}`;
}

export function fixupEvidence(input: {
  fixupTaskId: string;
  summary: TaskSummary;
  changes: readonly FileChange[];
  diff: string;
  /** The merged subtasks, and the one whose merge the fix-up repairs. */
  subtasks: readonly PlannedSubtask[];
  dod?: DodOutcome | undefined;
  workerSummary?: string | undefined;
}): FactsForAssessment {
  const work = changedWork(input.changes, input.subtasks);
  const deleted = work.flatMap((entry) => entry.changes.filter((change) => change.status === 'D'));
  const lines = work.map((entry) => {
    const listed = entry.changes.slice(0, LISTED).map(changeText).join(', ');
    const more = entry.changes.length > LISTED ? ` and ${entry.changes.length - LISTED} more` : '';
    return `- subtask ${entry.subtask}: ${listed}${more}`;
  });
  const summary = [
    `Fix-up ${input.fixupTaskId} ended ${input.summary.state} after ${input.summary.runs} worker run(s): ${input.summary.reason}. Its branch ${input.summary.branch} is at ${input.summary.headSha ?? 'unknown'}.`,
    work.length === 0
      ? "It changed nothing inside any merged subtask's write scope."
      : `It changed the work of ${work.length} merged subtask(s)${deleted.length > 0 ? `, and DELETED ${deleted.length} of their file(s)` : ''}; a fix-up must not undo what a subtask was for (every subtask's acceptance checks run again on the combined tree after it):`,
    ...lines,
  ].join('\n');
  return {
    summary,
    dodResults: input.dod?.results ?? [],
    diff: input.diff,
    ...(input.workerSummary ? { workerSummary: input.workerSummary } : {}),
  };
}
