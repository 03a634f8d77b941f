/**
 * What `verify` says about each recorded check, from the recorded result and the result of running it again
 * (pure): `holds` when it passes or fails as recorded, `differs` when it was passed and now fails or the
 * reverse, `not run` when it did not run again (or never ran: a kind agent-runner does not execute).
 */
import type { CriterionCheckResult, DodOutcome } from '../core/types.js';
import type { EvidenceRecord } from './evidence-record.js';

export type CheckVerdictKind = 'holds' | 'differs' | 'not_run';

/** One side of a check: what it did when the task ran, or now. */
export interface CheckSide {
  status: string;
  exitCode: number | null;
}

export interface CheckVerdict {
  verdict: CheckVerdictKind;
  /** `DoD test`, `criterion AC-1 (command)`. */
  check: string;
  /** The command, file or test name. */
  target: string;
  recorded: CheckSide | null;
  now: (CheckSide & { outputTail: string; failingTests?: string[] }) | null;
  /** Why it was not run, or what differs, in words. */
  why: string;
  /**
   * A recorded result is at stake: a `not run` of a check that ran when the task did means the evidence is not
   * confirmed; one that never ran (`manual`...) confirms nothing either way and is only shown.
   */
  counts: boolean;
}

export interface VerifyReport {
  verdicts: CheckVerdict[];
  holds: number;
  differs: number;
  notRun: number;
  /** Every check with a recorded result holds, and there was at least one. */
  allHold: boolean;
}

/** A result that passed (a `skipped` or `not_executed` one is neither). */
const passed = (status: string) => status === 'passed';
/** A result that ran: it passed, failed or timed out. */
const ran = (status: string) => status === 'passed' || status === 'failed' || status === 'timeout';

/** A check's result, DoD or criterion: what the comparison reads of it. */
type ResultLike = CheckSide & { outputTail: string; reason?: string; failingTests?: string[] };

function side(result: CheckSide): CheckSide {
  return { status: result.status, exitCode: result.exitCode };
}

function compare(
  check: string,
  target: string,
  recorded: CheckSide | null,
  now: ResultLike | null,
): CheckVerdict {
  const base = { check, target, recorded: recorded ? side(recorded) : null };
  if (!recorded || !ran(recorded.status))
    return {
      ...base,
      verdict: 'not_run',
      now: null,
      why: recorded ? `it did not run when the task ran (${recorded.status})` : 'no result was recorded',
      counts: false,
    };
  if (!now || !ran(now.status))
    return {
      ...base,
      verdict: 'not_run',
      now: now ? { ...side(now), outputTail: now.outputTail } : null,
      why: now
        ? `it could not run now (${now.status}${now.reason ? `: ${now.reason}` : ''})`
        : 'it did not run now',
      counts: true,
    };
  const same = passed(recorded.status) === passed(now.status);
  return {
    ...base,
    verdict: same ? 'holds' : 'differs',
    now: {
      ...side(now),
      outputTail: now.outputTail,
      ...(now.failingTests?.length ? { failingTests: now.failingTests } : {}),
    },
    why: same
      ? ''
      : `was ${recorded.status} (exit ${recorded.exitCode ?? '-'}), now ${now.status} (exit ${now.exitCode ?? '-'})`,
    counts: true,
  };
}

/** Each recorded DoD check and criterion check against its result now. */
export function compareEvidence(
  evidence: Pick<EvidenceRecord, 'dod' | 'criteria'>,
  now: { dod: DodOutcome; criteria: readonly CriterionCheckResult[] },
): VerifyReport {
  const verdicts: CheckVerdict[] = [];
  (evidence.dod?.results ?? []).forEach((recorded, index) => {
    // By position, then name and command: the DoD ran in the recorded order, from the recorded commands.
    const candidate = now.dod.results[index];
    const result =
      candidate && candidate.name === recorded.name && candidate.command === recorded.command
        ? candidate
        : now.dod.results.find((item) => item.name === recorded.name && item.command === recorded.command);
    verdicts.push(compare(`DoD ${recorded.name}`, recorded.command, recorded, result ?? null));
  });
  for (const criterion of evidence.criteria) {
    if (!criterion.check) continue;
    const recorded = criterion.checkResult;
    const result = now.criteria.find((item) => item.criterionId === criterion.id) ?? null;
    verdicts.push(
      compare(
        `criterion ${criterion.id} (${criterion.check.kind})`,
        recorded?.target ??
          criterion.check.command ??
          criterion.check.file ??
          criterion.check.test_name ??
          '',
        recorded,
        result,
      ),
    );
  }
  const count = (kind: CheckVerdictKind) => verdicts.filter((verdict) => verdict.verdict === kind).length;
  const counted = verdicts.filter((verdict) => verdict.counts);
  return {
    verdicts,
    holds: count('holds'),
    differs: count('differs'),
    notRun: count('not_run'),
    allHold: counted.length > 0 && counted.every((verdict) => verdict.verdict === 'holds'),
  };
}
