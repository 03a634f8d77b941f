/**
 * The completion gate: COMPLETE needs the Meta-agent's assessment AND the facts the runner observed, and at
 * least one check that really ran and passed on the committed tree (no evidence, no COMPLETE). Pure; returns
 * every reason the task cannot be called complete (empty = complete), and what a decision rests on.
 */
import {
  EXECUTED_CHECK_STATUSES,
  type AcceptanceCriterion,
  type Assessment,
  type CriterionCheckResult,
  type DodOutcome,
  type TaskFacts,
} from './types.js';

export interface GateInput {
  criteria: readonly AcceptanceCriterion[];
  assessment: Assessment | undefined;
  facts: TaskFacts | undefined;
  dod: DodOutcome | undefined;
  /** The acceptance criteria's checks of the same validation (absent: none ran). */
  criteriaChecks?: readonly CriterionCheckResult[];
  /** `--skip-dod` or `dod.skip`: DoD is not evidence either way. */
  dodSkipped: boolean;
}

/** The refusal that no further worker run can lift: nothing executable exists to prove the work. */
export const NO_EXECUTABLE_EVIDENCE = 'no executable evidence';

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

function describeCheck(check: CriterionCheckResult): string {
  const exit = check.exitCode === null ? '' : `, exit ${check.exitCode}`;
  return `${check.kind} \`${check.target}\` ${check.status === 'timeout' ? 'timed out' : check.status}${exit}`;
}

export function completionRefusals(input: GateInput): string[] {
  const reasons: string[] = [];
  const { assessment, facts, dod } = input;
  if (!assessment) reasons.push('no completion assessment yet');
  else {
    if (!assessment.allCriteriaSatisfied)
      reasons.push('the assessment says not every criterion is satisfied');
    for (const criterion of input.criteria.filter((item) => item.critical)) {
      const verdict = assessment.byCriterion.find((item) => item.id === criterion.id);
      if (verdict?.status !== 'passed') {
        reasons.push(`critical criterion ${criterion.id} is ${verdict?.status ?? 'not assessed'}`);
      }
    }
  }
  // A critical criterion's own check is a fact: when it ran and failed, no assessment can outvote it.
  for (const check of input.criteriaChecks ?? []) {
    if (check.critical && (check.status === 'failed' || check.status === 'timeout'))
      reasons.push(`critical criterion ${check.criterionId}: its check ${describeCheck(check)}`);
  }
  if (!facts) reasons.push('no facts observed yet');
  else {
    if (facts.commits.length === 0) reasons.push('no commit on the task branch since the base');
    if (facts.dirty)
      reasons.push(`the working tree is not clean (${facts.uncommitted.length} uncommitted path(s))`);
    if (facts.scopeViolations.length > 0) {
      reasons.push(`scope violations: ${facts.scopeViolations.slice(0, 10).join(', ')}`);
    }
    if (facts.problems?.length) reasons.push(`the facts are incomplete: ${facts.problems.join('; ')}`);
  }
  if (!input.dodSkipped) {
    if (!dod) reasons.push('the Definition-of-Done checks have not run');
    else if (dod.ranOnDirtyTree) reasons.push('the DoD checks ran on a dirty tree, so they are not evidence');
    else if (dod.status === 'failed') {
      const failing = dod.results.filter((result) => result.status !== 'passed').map((result) => result.name);
      reasons.push(`DoD checks failing: ${failing.join(', ')}`);
    }
    if (dod && facts && !facts.dirty && passingEvidence(input).length === 0) {
      reasons.push(
        `${NO_EXECUTABLE_EVIDENCE}: no Definition-of-Done check was configured or detected and no acceptance ` +
          'criterion has a check that ran and passed (configure dod.checks, or plan criteria with command, test or file_exists checks)',
      );
    }
  }
  return reasons;
}

/** True when the only thing between the task and COMPLETE is evidence no worker run can create. */
export function onlyEvidenceMissing(refusals: readonly string[]): boolean {
  return refusals.length > 0 && refusals.every((reason) => reason.startsWith(NO_EXECUTABLE_EVIDENCE));
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
  if (facts) {
    lines.push(
      `Facts: ${facts.commits.length} commit(s) on the task branch (head ${facts.headSha.slice(0, 12)}), ` +
        `${facts.dirty ? `${facts.uncommitted.length} uncommitted path(s)` : 'clean tree'}, ` +
        `${facts.scopeViolations.length ? `${facts.scopeViolations.length} scope violation(s)` : 'no scope violation'}.`,
    );
  } else lines.push('Facts: none observed.');
  if (input.dodSkipped) lines.push('Definition of Done: skipped on request.');
  else if (!dod) lines.push('Definition of Done: did not run.');
  else if (dod.results.length === 0) lines.push(`Definition of Done: no check (${dod.source}).`);
  else {
    const passed = dod.results.filter((result) => result.status === 'passed').length;
    lines.push(
      `Definition of Done: ${passed}/${dod.results.length} check(s) passed${dod.ranOnDirtyTree ? ' on a dirty tree' : ''} (${dod.results.map((result) => `${result.name} ${result.status}`).join(', ')}).`,
    );
  }
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
