/**
 * Fingerprints of what the runner observed, to tell "nothing changed" apart from progress: an assessment is
 * asked again only when the evidence changed, and a decision repeated on unchanged evidence is a stall.
 * Deterministic across attempts (plain JSON of the facts that matter), so a resumed task compares too.
 */
import type { CriterionCheckResult, DodOutcome, TaskFacts } from './types.js';

/** The state of the work: head, uncommitted paths, scope violations. */
export function factsFingerprint(facts: TaskFacts): string {
  return JSON.stringify({
    head: facts.headSha,
    dirty: facts.dirty,
    uncommitted: [...facts.uncommitted].sort(),
    violations: [...facts.scopeViolations].sort(),
  });
}

/**
 * The facts plus the result of every DoD and criterion check and the commit they ran on: the same results on
 * another checkout are other evidence.
 */
export function evidenceFingerprint(
  facts: TaskFacts,
  dod: DodOutcome | undefined,
  checks: readonly CriterionCheckResult[],
  checkedHead: string | null,
): string {
  return JSON.stringify({
    facts: factsFingerprint(facts),
    checkedHead,
    dod: dod
      ? [
          dod.status,
          dod.ranOnDirtyTree,
          ...dod.results.map((result) => [result.name, result.status, result.exitCode]),
        ]
      : null,
    checks: checks.map((check) => [check.criterionId, check.status, check.exitCode]),
  });
}
