/**
 * What a combined check on the integration branch says: it passes when the DoD passed (or there was none to
 * run) and no critical criterion of a merged subtask failed on the combined tree. A critical check that ran
 * and failed (or timed out) is a fact, as in a task's completion gate: the DoD passing does not outvote it, so
 * a fix-up that makes the DoD green by removing a subtask's work is caught. Checks of kinds agent-runner does
 * not execute (`manual`...) and checks that could not be executed are shown, not judged. Pure.
 */
import type { CriterionCheckResult, DodOutcome } from '../core/types.js';
import type { CombinedCheck, SubtaskCriterionCheck } from './project-events.js';

const PASSING_DOD: ReadonlySet<DodOutcome['status']> = new Set(['passed', 'none', 'skipped']);

/** A criterion check whose failure blocks the merge: critical, and it ran and did not pass. */
export function blocksMerge(check: Pick<CriterionCheckResult, 'critical' | 'status'>): boolean {
  return check.critical && (check.status === 'failed' || check.status === 'timeout');
}

/** The critical criteria checks that failed on the combined tree, with their subtasks. */
export function failedCriteria(check: CombinedCheck): SubtaskCriterionCheck[] {
  return (check.criteria ?? []).filter(blocksMerge);
}

/** A DoD that passed, or had nothing to run. */
export function dodPassed(dod: DodOutcome): boolean {
  return PASSING_DOD.has(dod.status);
}

export function combinedPassed(check: CombinedCheck): boolean {
  return dodPassed(check.dod) && failedCriteria(check).length === 0;
}

/** One word for the check: the DoD's status, or `failed` when a subtask's critical criterion failed. */
export function combinedStatus(check: CombinedCheck): DodOutcome['status'] {
  return failedCriteria(check).length > 0 ? 'failed' : check.dod.status;
}

/** The DoD checks that did not pass, each with its output tail. */
export function dodReport(dod: DodOutcome): string {
  return dod.results
    .filter((result) => result.status !== 'passed' && result.status !== 'skipped')
    .map(
      (result) => `- \`${result.command}\` ${result.status} (exit ${result.exitCode}):\n${result.outputTail}`,
    )
    .join('\n');
}

/** What failed on the combined tree: DoD checks, then each subtask's critical criteria, with output tails. */
export function combinedReport(check: CombinedCheck): string {
  const criteria = failedCriteria(check).map(
    (result) =>
      `- subtask \`${result.subtask}\`, criterion ${result.criterionId}: \`${result.target}\` ${result.status} (exit ${result.exitCode ?? '-'})${result.reason ? `: ${result.reason}` : ''}:\n${result.outputTail}`,
  );
  return [dodReport(check.dod), ...criteria].filter(Boolean).join('\n');
}

/** One line for progress and summaries: `failed (test failed; alpha AC-1 failed)`. */
export function combinedLine(check: CombinedCheck): string {
  const parts = [
    ...check.dod.results.map((result) => `${result.name} ${result.status}`),
    ...(check.criteria ?? []).map(
      (result) =>
        `${result.subtask} ${result.criterionId} ${result.status}${result.critical ? '' : ' (not critical)'}`,
    ),
  ];
  return `${combinedStatus(check)}${parts.length ? ` (${parts.join(', ')})` : ''}`;
}
