/**
 * The completion gate: COMPLETE needs the Meta-agent's assessment AND the facts the runner observed.
 * Pure; returns every reason the task cannot be called complete (empty = complete).
 */
import type { AcceptanceCriterion, Assessment, DodOutcome, TaskFacts } from './types.js';

export interface GateInput {
  criteria: readonly AcceptanceCriterion[];
  assessment: Assessment | undefined;
  facts: TaskFacts | undefined;
  dod: DodOutcome | undefined;
  /** `--skip-dod` or `dod.skip`: DoD is not evidence either way. */
  dodSkipped: boolean;
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
  if (!facts) reasons.push('no facts observed yet');
  else {
    if (facts.commits.length === 0) reasons.push('no commit on the task branch since the base');
    if (facts.dirty)
      reasons.push(`the working tree is not clean (${facts.uncommitted.length} uncommitted path(s))`);
    if (facts.scopeViolations.length > 0) {
      reasons.push(`scope violations: ${facts.scopeViolations.slice(0, 10).join(', ')}`);
    }
  }
  if (!input.dodSkipped) {
    if (!dod) reasons.push('the Definition-of-Done checks have not run');
    else if (dod.ranOnDirtyTree) reasons.push('the DoD checks ran on a dirty tree, so they are not evidence');
    else if (dod.status === 'failed') {
      const failing = dod.results.filter((result) => result.status !== 'passed').map((result) => result.name);
      reasons.push(`DoD checks failing: ${failing.join(', ')}`);
    }
  }
  return reasons;
}
