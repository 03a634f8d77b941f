/**
 * The completion gate: COMPLETE needs the Meta-agent's assessment AND the facts the runner observed, and at
 * least one check that really ran and passed on the committed tree (no evidence, no COMPLETE). The facts and
 * the checks are about one commit, the worker's head: the checks ran on it, and the task branch in the person's
 * repository holds it (not a pending ref beside it). Pure; returns every reason the task cannot be called
 * complete as coded refusals (empty = complete), and what a decision rests on.
 */
import {
  EXECUTED_CHECK_STATUSES,
  type AcceptanceCriterion,
  type Assessment,
  type CriterionCheckResult,
  type Baseline,
  type DodCheckResult,
  type DodOutcome,
  type TaskFacts,
} from './types.js';
import { baselineLine, comparisonText, excusedByBase, type RedBasePolicy } from './baseline.js';
import { describeCheck, refusalMessage, shortSha, type Refusal } from './refusal.js';

export { NO_EXECUTABLE_EVIDENCE, onlyEvidenceMissing, type Refusal } from './refusal.js';

export interface GateInput {
  criteria: readonly AcceptanceCriterion[];
  assessment: Assessment | undefined;
  facts: TaskFacts | undefined;
  dod: DodOutcome | undefined;
  /** The acceptance criteria's checks of the same validation (absent: none ran). */
  criteriaChecks?: readonly CriterionCheckResult[];
  /** `--skip-dod` or `dod.skip`: DoD is not evidence either way. */
  dodSkipped: boolean;
  /** The replayed commit the checks of this validation ran on (null: not one commit the runner knows). */
  checkedHead: string | null;
  /** The DoD on the base before any change (src/core/baseline.ts), when it ran. */
  baseline?: Baseline | null;
  /** What a check red on the base must do (default `no_worse`). */
  redBase?: RedBasePolicy;
}

/** Checks (DoD or criteria) that ran and passed on a clean tree: the evidence COMPLETE needs. */
export function passingEvidence(input: Pick<GateInput, 'dod' | 'criteriaChecks'>): string[] {
  const evidence: string[] = [];
  for (const result of input.dod?.results ?? [])
    if (result.status === 'passed' && !input.dod?.ranOnDirtyTree) evidence.push(`DoD ${result.name}`);
  for (const check of input.criteriaChecks ?? [])
    if (check.status === 'passed' && !check.ranOnDirtyTree)
      evidence.push(`${check.criterionId} ${check.kind} check`);
  return evidence;
}

/** Every reason the task cannot be called complete, coded (empty = complete). */
export function gateRefusals(input: GateInput): Refusal[] {
  return [
    ...assessmentRefusals(input),
    ...factRefusals(input.facts),
    ...checkedHeadRefusals(input),
    ...dodRefusals(input),
  ];
}

/**
 * The refusal when the task branch in the person's repository does not hold the worker's head (the commits
 * are on the pending ref, or where the branch points was not observed), else null.
 */
export function workOffBranch(facts: TaskFacts): Extract<Refusal, { code: 'work_not_on_branch' }> | null {
  if (facts.taskBranch?.headSha === facts.headSha) return null;
  return {
    code: 'work_not_on_branch',
    head: facts.headSha,
    branch: facts.taskBranch ?? null,
    pendingRef: facts.pendingRef ?? null,
    reason: facts.pendingReason ?? null,
  };
}

/**
 * The reason a task ends with, and where its work is when the task branch does not hold it (the pending ref
 * and how to look at it), unless the reason says so already.
 */
export function closingReason(reason: string, facts: TaskFacts | undefined): string {
  const off = facts ? workOffBranch(facts) : null;
  if (!off?.branch) return reason;
  const words = refusalMessage(off);
  return reason.includes(words) ? reason : `${reason}; ${words}`;
}

/** {@link gateRefusals} in words. */
export function completionRefusals(input: GateInput): string[] {
  return gateRefusals(input).map(refusalMessage);
}

function assessmentRefusals(input: GateInput): Refusal[] {
  const refusals: Refusal[] = [];
  const { assessment } = input;
  if (!assessment) refusals.push({ code: 'no_assessment' });
  else {
    if (!assessment.allCriteriaSatisfied) refusals.push({ code: 'assessment_unsatisfied' });
    for (const criterion of input.criteria.filter((item) => item.critical)) {
      const verdict = assessment.byCriterion.find((item) => item.id === criterion.id);
      if (verdict?.status !== 'passed')
        refusals.push({
          code: 'critical_not_passed',
          criterion: criterion.id,
          status: verdict?.status ?? 'not assessed',
        });
    }
  }
  // A critical criterion's own check is a fact: when it ran and failed, no assessment can outvote it.
  for (const check of input.criteriaChecks ?? []) {
    if (check.critical && (check.status === 'failed' || check.status === 'timeout'))
      refusals.push({ code: 'critical_check_failed', criterion: check.criterionId, check });
  }
  return refusals;
}

function factRefusals(facts: TaskFacts | undefined): Refusal[] {
  if (!facts) return [{ code: 'no_facts' }];
  const refusals: Refusal[] = [];
  if (facts.commits.length === 0) refusals.push({ code: 'no_commit' });
  if (facts.dirty) refusals.push({ code: 'dirty_tree', paths: facts.uncommitted.length });
  if (facts.scopeViolations.length > 0)
    refusals.push({ code: 'scope_violations', paths: facts.scopeViolations });
  if (facts.problems?.length) refusals.push({ code: 'facts_incomplete', problems: facts.problems });
  const offBranch = workOffBranch(facts);
  if (offBranch) refusals.push(offBranch);
  return refusals;
}

/** The checks are evidence about the worker's head only when they ran on it, and it did not move meanwhile. */
function checkedHeadRefusals(input: GateInput): Refusal[] {
  const { facts, checkedHead } = input;
  if (!facts || checkedHead === facts.headSha) return [];
  return [{ code: 'checks_not_on_head', head: facts.headSha, checkedHead }];
}

function dodRefusals(input: GateInput): Refusal[] {
  const { dod, facts } = input;
  if (input.dodSkipped) return [];
  const refusals: Refusal[] = [];
  if (!dod) refusals.push({ code: 'dod_not_run' });
  else if (dod.ranOnDirtyTree) refusals.push({ code: 'dod_on_dirty_tree' });
  else if (dod.status === 'failed') {
    // A check red on the base that is not worse is not this task's to fix (unless the policy says so).
    const policy = input.redBase ?? 'no_worse';
    const failing = dod.results
      .filter((result) => result.status !== 'passed' && !excusedByBase(result, policy))
      .map((result) =>
        result.base?.verdict === 'green_before' ? `${result.name} (broken by this task)` : result.name,
      );
    if (failing.length > 0) refusals.push({ code: 'dod_failing', checks: failing });
  }
  if (dod && facts && !facts.dirty && passingEvidence(input).length === 0)
    refusals.push({
      code: 'no_executable_evidence',
      dodChecks: dod.results.filter((result) => result.status !== 'skipped').length,
    });
  return refusals;
}

/** The facts in one line: where the commits are (never "on the task branch" when it does not hold them). */
function factsLine(facts: TaskFacts): string {
  const offBranch = workOffBranch(facts);
  const where = offBranch
    ? `${facts.commits.length} commit(s) since the base, but ${refusalMessage(offBranch)};`
    : `${facts.commits.length} commit(s) on the task branch (head ${shortSha(facts.headSha)}),`;
  return (
    `Facts: ${where} ${facts.dirty ? `${facts.uncommitted.length} uncommitted path(s)` : 'clean tree'}, ` +
    `${facts.scopeViolations.length ? `${facts.scopeViolations.length} scope violation(s)` : 'no scope violation'}.`
  );
}

/** What a decision rests on, in a few lines for the note and `--json`. */
export function decisionBasis(input: GateInput): string[] {
  const lines: string[] = [];
  const { assessment, facts, dod } = input;
  if (assessment) {
    const passed = assessment.byCriterion.filter((item) => item.status === 'passed').length;
    lines.push(
      `Assessment: ${assessment.allCriteriaSatisfied ? 'every criterion satisfied' : 'not every criterion satisfied'} (${passed}/${assessment.byCriterion.length} passed).`,
    );
  } else lines.push('Assessment: none.');
  lines.push(facts ? factsLine(facts) : 'Facts: none observed.');
  for (const refusal of checkedHeadRefusals(input)) lines.push(`Checks: ${refusalMessage(refusal)}.`);
  if (input.dodSkipped) lines.push('Definition of Done: skipped on request.');
  else if (!dod) lines.push('Definition of Done: did not run.');
  else if (dod.results.length === 0) lines.push(`Definition of Done: no check (${dod.source}).`);
  else {
    const passed = dod.results.filter((result) => result.status === 'passed').length;
    const each = (result: DodCheckResult) => {
      const compared = comparisonText(result);
      return `${result.name} ${result.status}${compared ? `: ${compared}` : ''}`;
    };
    lines.push(
      `Definition of Done: ${passed}/${dod.results.length} check(s) passed${dod.ranOnDirtyTree ? ' on a dirty tree' : ''} (${dod.results.map(each).join(', ')}).`,
    );
  }
  if (input.baseline) lines.push(baselineLine(input.baseline));
  const checks = input.criteriaChecks ?? [];
  if (checks.length > 0) {
    const executed = checks.filter((check) => EXECUTED_CHECK_STATUSES.includes(check.status));
    lines.push(
      `Criteria checks: ${executed.filter((check) => check.status === 'passed').length}/${executed.length} executed check(s) passed; ` +
        checks.map((check) => `${check.criterionId} ${describeCheck(check)}`).join('; ') +
        '.',
    );
  } else lines.push('Criteria checks: none planned.');
  const evidence = passingEvidence(input);
  lines.push(
    evidence.length > 0
      ? `Executable evidence: ${evidence.join(', ')}.`
      : input.dodSkipped
        ? 'Executable evidence: none required (DoD skipped on request).'
        : 'Executable evidence: none.',
  );
  return lines;
}
