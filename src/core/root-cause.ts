/**
 * The root cause of a task that did not complete because a check failed: which check (the first failing
 * DoD check, else the first failing critical criterion check, else any failing criterion check), its exit
 * code, the informative first error line of its output and the fix where one is known. Shown in the closing
 * summary, the note and `--json`, so a person does not have to dig for it. Built from recorded results only
 * (output tails are recorded without terminal sequences); advice, never read by the gate. Pure.
 */
import { failureHint, firstErrorLine } from './failure-hints.js';
import { checkDetailText } from './test-counts.js';
import type { CriterionCheckResult, DodOutcome, RootCause } from './types.js';

const FAILING = new Set(['failed', 'timeout']);

function fromDod(dod: DodOutcome | undefined): RootCause | null {
  const failing = dod?.results.filter((result) => FAILING.has(result.status)) ?? [];
  // A check that was red on the base and is no worse is not what this task stopped on, when another failed.
  const check = failing.find((result) => result.base?.verdict !== 'red_before');
  if (!check) return null;
  return cause(`DoD check ${check.name}`, check.command, check);
}

function fromCriteria(checks: readonly CriterionCheckResult[]): RootCause | null {
  const executed = checks.filter((check) => FAILING.has(check.status));
  const check = executed.find((candidate) => candidate.critical) ?? executed[0];
  if (!check) return null;
  return cause(`criterion ${check.criterionId}'s ${check.kind} check`, check.target, check);
}

function cause(
  check: string,
  command: string,
  result: Pick<CriterionCheckResult, 'exitCode' | 'outputTail' | 'tests'> & { status: string },
): RootCause {
  const failed = {
    output: result.outputTail,
    exitCode: result.exitCode,
    timedOut: result.status === 'timeout',
  };
  return {
    check,
    command,
    status: result.status,
    exitCode: result.exitCode,
    errorLine: firstErrorLine(result.outputTail),
    hint: failureHint(failed, 'check'),
    ...(result.tests ? { tests: result.tests } : {}),
  };
}

/** The failing check the task stopped on, or null when no check failed in the latest evidence. */
export function rootCauseOf(
  dod: DodOutcome | undefined,
  checks: readonly CriterionCheckResult[] | undefined,
): RootCause | null {
  return fromDod(dod) ?? fromCriteria(checks ?? []);
}

/** The root cause in one line: `DoD check test (`npm test`) failed (exit 1; 3 passed, 1 failed): <line>`. */
export function rootCauseLine(cause: RootCause): string {
  const how = cause.status === 'timeout' ? 'timed out' : 'failed';
  const detail = checkDetailText(cause.exitCode, cause.tests);
  return `${cause.check} (\`${cause.command}\`) ${how}${detail}${cause.errorLine ? `: ${cause.errorLine}` : ''}`;
}
