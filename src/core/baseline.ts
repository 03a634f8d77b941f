/**
 * The baseline: the DoD run once on the task's base tree, before any worker run, so a check that was red
 * before any change is told apart from one this task broke. Pure: each later DoD result is compared with the
 * same check on the base (same name and command), and the comparison goes with the result into the journal,
 * the note, `--json`, the Meta-agent's prompt and the completion gate.
 *
 * A check red on the base is "not worse" only on evidence: the failing tests it names now are all among those
 * it named on the base, or, where a runner names none, both runs give counts and no more tests fail now. A
 * timeout where the base failed, a run that names failing tests the base did not, or a run whose output says
 * too little to compare is `worse`. The test names and counts come from output the worker's code shapes: at
 * worst a worker makes a red check look no worse than on the base — never a red check look passed.
 */
import type { BaseComparison, Baseline, DodCheckResult, DodOutcome } from './types.js';

/**
 * `no_worse` (default): a check red on the base may stay red if it is not worse; `must_pass`: every check must
 * pass, as without a baseline (the baseline is still shown).
 */
export type RedBasePolicy = 'no_worse' | 'must_pass';

/** The same check on the base: same name and command (a changed command is another check). */
function onBase(now: DodCheckResult, baseline: Baseline): DodCheckResult | undefined {
  return baseline.dod.results.find((base) => base.name === now.name && base.command === now.command);
}

/** How a check now compares with the same check on the base; undefined when the base has no such result. */
export function compareWithBase(
  now: DodCheckResult,
  base: DodCheckResult | undefined,
): BaseComparison | undefined {
  if (!base || base.status === 'skipped') return undefined;
  const common = {
    status: base.status,
    exitCode: base.exitCode,
    ...(base.tests ? { tests: base.tests } : {}),
  };
  if (base.status === 'passed') return { ...common, verdict: 'green_before' };
  if (now.status === 'passed') return { ...common, verdict: 'red_before' };
  if (now.status === 'timeout' && base.status !== 'timeout') return { ...common, verdict: 'worse' };
  if (now.failingTests && base.failingTests) {
    const before = new Set(base.failingTests);
    const newFailures = now.failingTests.filter((name) => !before.has(name));
    return newFailures.length > 0
      ? { ...common, verdict: 'worse', newFailures }
      : { ...common, verdict: 'red_before' };
  }
  if (now.tests && base.tests && !now.failingTests === !base.failingTests)
    return { ...common, verdict: now.tests.failed <= base.tests.failed ? 'red_before' : 'worse' };
  return { ...common, verdict: 'worse' };
}

/** The DoD outcome with each result compared with the base (unchanged without a baseline). */
export function withBaseline(dod: DodOutcome, baseline: Baseline | null | undefined): DodOutcome {
  if (!baseline) return dod;
  return {
    ...dod,
    results: dod.results.map((result) => {
      const base = compareWithBase(result, onBase(result, baseline));
      return base ? { ...result, base } : result;
    }),
  };
}

/** Whether a result that did not pass is excused by the policy: red on the base, and not worse. */
export function excusedByBase(result: DodCheckResult, policy: RedBasePolicy): boolean {
  return policy === 'no_worse' && result.status !== 'passed' && result.base?.verdict === 'red_before';
}

/** The checks that were red on the base, by name. */
export function redOnBase(baseline: Baseline): string[] {
  return baseline.dod.results
    .filter((result) => result.status === 'failed' || result.status === 'timeout')
    .map((result) => result.name);
}

/** What a comparison says, in words for the note, the summary and the Meta-agent. */
export function comparisonText(result: DodCheckResult): string {
  const base = result.base;
  if (!base) return '';
  if (base.verdict === 'green_before')
    return result.status === 'passed'
      ? 'passed on the base too'
      : 'broken by this task (it passed on the base)';
  if (base.verdict === 'red_before')
    return result.status === 'passed'
      ? 'red on the base, fixed by this task'
      : 'red before any change (on the base too), not worse';
  const added = base.newFailures?.length
    ? `: ${base.newFailures.slice(0, 5).join(', ')}${base.newFailures.length > 5 ? ` and ${base.newFailures.length - 5} more` : ''} fail now, not on the base`
    : ': red on the base, and it cannot be shown not to be worse now';
  return `worse than on the base${added}`;
}

/** One line on the baseline for the decision's basis. */
export function baselineLine(baseline: Baseline): string {
  const { results } = baseline.dod;
  if (results.length === 0) return 'Baseline: no DoD check to run on the base.';
  const red = redOnBase(baseline);
  return red.length === 0
    ? `Baseline: every DoD check passed on the base (${baseline.baseSha.slice(0, 12)}) before any change.`
    : `Baseline: red before any change on the base (${baseline.baseSha.slice(0, 12)}): ${red.join(', ')}.`;
}
