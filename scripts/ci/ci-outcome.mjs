/**
 * What agent-runner-ci makes of a finished `agent-runner run --json`: the job's exit code, the annotation's
 * level and word, and the one message a person reads first (docs/ci.md). Pure, so it is tested on its own;
 * plain JavaScript with no dependency, like the script that imports it.
 */

/** What the job does with an exit code: its own exit code, a level and a word. */
export function outcomeOf(exitCode, needsReview) {
  if (exitCode === 0) return { exit: 0, level: 'notice', outcome: 'complete' };
  if (exitCode === 3 || exitCode === 124)
    return needsReview === 'neutral'
      ? { exit: 0, level: 'warning', outcome: 'needs-review' }
      : { exit: exitCode, level: 'error', outcome: 'needs-review' };
  if (exitCode === 6) return { exit: 6, level: 'error', outcome: 'delivery-failed' };
  return { exit: exitCode, level: 'error', outcome: 'failed' };
}

/** A summary's text field as a string, or undefined (`error` is an object `{code, message}` or null). */
function textOf(value) {
  if (typeof value === 'string') return value || undefined;
  return typeof value?.message === 'string' && value.message ? value.message : undefined;
}

/**
 * The one message a person reads first. Exit 6 (the task ended, its delivery failed): the delivery's reason
 * with its fix, from the summary's `delivery.error`. Otherwise the summary's error or reason, else the last
 * line agent-runner printed on stderr.
 */
export function messageOf({ summary, stderrTail, exitCode }) {
  const delivery = exitCode === 6 ? textOf(summary?.delivery?.error) : undefined;
  const lastLine =
    String(stderrTail ?? '')
      .trim()
      .split('\n')
      .at(-1) ?? '';
  const text = delivery ?? textOf(summary?.error) ?? textOf(summary?.reason) ?? lastLine;
  const state = summary?.state ?? 'no task';
  return `agent-runner: ${state}, exit ${exitCode}${exitCode === 6 ? ' (delivery failed)' : ''}${text ? `: ${text}` : ''}`;
}
