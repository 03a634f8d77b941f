/**
 * Why the completion gate refuses COMPLETE, as coded values: behaviour depends on the code (a refusal no
 * worker run can lift ends the task), and the words the Meta-agent, the journal and the note read are derived
 * from it here. Pure.
 */
import type { CriterionCheckResult, TaskFacts } from './types.js';

export type Refusal =
  | { code: 'no_assessment' }
  | { code: 'assessment_unsatisfied' }
  | { code: 'critical_not_passed'; criterion: string; status: string }
  | { code: 'critical_check_failed'; criterion: string; check: CriterionCheckResult }
  | { code: 'no_facts' }
  | { code: 'no_commit' }
  | { code: 'dirty_tree'; paths: number }
  | { code: 'scope_violations'; paths: readonly string[] }
  | { code: 'facts_incomplete'; problems: readonly string[] }
  /**
   * The task branch in the person's repository does not hold the worker's head (`head`): the work is on the
   * pending ref, or where the branch points was not observed (`branch` null).
   */
  | {
      code: 'work_not_on_branch';
      head: string;
      branch: NonNullable<TaskFacts['taskBranch']> | null;
      pendingRef: string | null;
      reason: string | null;
    }
  /** The DoD and criteria checks ran on another commit than the worker's head, or it moved while they ran. */
  | { code: 'checks_not_on_head'; head: string; checkedHead: string | null }
  | { code: 'dod_not_run' }
  | { code: 'dod_on_dirty_tree' }
  | { code: 'dod_failing'; checks: readonly string[] }
  /** Nothing executable exists to prove the work: no further worker run can lift it. */
  | { code: 'no_executable_evidence'; dodChecks?: number };

/** The refusal that no further worker run can lift (its message starts with it). */
export const NO_EXECUTABLE_EVIDENCE = 'no executable evidence';

/** A commit id as the messages show it. */
export const shortSha = (sha: string): string => sha.slice(0, 12);

/** How to look at a ref from the person's repository. */
export const lookAtRef = (ref: string): string => `git log ${ref}`;

/** Where the work is when the task branch does not hold it, in words (the refusal, the basis, the reason). */
function workNotOnBranchMessage(refusal: Extract<Refusal, { code: 'work_not_on_branch' }>): string {
  const head = shortSha(refusal.head);
  if (refusal.branch === null)
    return `where the task branch points was not observed, so the worker's head ${head} is not known to be on it`;
  const branch = `${refusal.branch.name} is at ${shortSha(refusal.branch.headSha)}`;
  if (refusal.pendingRef === null) return `the work is not on the task branch: ${branch}, not at ${head}`;
  return (
    `the work is not on the task branch: ${branch}; the worker's head ${head} is kept at ${refusal.pendingRef}` +
    `${refusal.reason ? ` (${refusal.reason})` : ''}; look at it with \`${lookAtRef(refusal.pendingRef)}\``
  );
}

/** A criterion's check in a few words: kind, target, status and exit code. */
export function describeCheck(check: CriterionCheckResult): string {
  const exit = check.exitCode === null ? '' : `, exit ${check.exitCode}`;
  return `${check.kind} \`${check.target}\` ${check.status === 'timeout' ? 'timed out' : check.status}${exit}`;
}

export function refusalMessage(refusal: Refusal): string {
  switch (refusal.code) {
    case 'no_assessment':
      return 'no completion assessment yet';
    case 'assessment_unsatisfied':
      return 'the assessment says not every criterion is satisfied';
    case 'critical_not_passed':
      return `critical criterion ${refusal.criterion} is ${refusal.status}`;
    case 'critical_check_failed':
      return `critical criterion ${refusal.criterion}: its check ${describeCheck(refusal.check)}`;
    case 'no_facts':
      return 'no facts observed yet';
    case 'no_commit':
      return 'no commit on the task branch since the base';
    case 'dirty_tree':
      return `the working tree is not clean (${refusal.paths} uncommitted path(s))`;
    case 'scope_violations':
      return `scope violations: ${refusal.paths.slice(0, 10).join(', ')}`;
    case 'facts_incomplete':
      return `the facts are incomplete: ${refusal.problems.join('; ')}`;
    case 'work_not_on_branch':
      return workNotOnBranchMessage(refusal);
    case 'checks_not_on_head':
      return (
        `the DoD and criteria checks did not run on the worker's head ${shortSha(refusal.head)}: the sandbox had ` +
        (refusal.checkedHead === null
          ? 'another commit checked out, or its checkout moved while they ran'
          : `${shortSha(refusal.checkedHead)} checked out`)
      );
    case 'dod_not_run':
      return 'the Definition-of-Done checks have not run';
    case 'dod_on_dirty_tree':
      return 'the DoD checks ran on a dirty tree, so they are not evidence';
    case 'dod_failing':
      return `DoD checks failing: ${refusal.checks.join(', ')}`;
    case 'no_executable_evidence':
      return (
        `${NO_EXECUTABLE_EVIDENCE}: ${
          refusal.dodChecks
            ? `none of the ${refusal.dodChecks} Definition-of-Done check(s) passed on the committed tree (a check red on the base that is not worse is no pass)`
            : 'no Definition-of-Done check was configured or detected'
        } and no acceptance criterion has a check that ran and passed (configure dod.checks, or plan criteria ` +
        'with command, test or file_exists checks)'
      );
  }
}

/** True when the only thing between the task and COMPLETE is evidence no worker run can create. */
export function onlyEvidenceMissing(refusals: readonly Refusal[]): boolean {
  return refusals.length > 0 && refusals.every((refusal) => refusal.code === 'no_executable_evidence');
}
