/**
 * Stall detection: the same decision on the same evidence (or the same refusal) `limits.maxStalls` times in a
 * row ends the task, since a model that repeats itself would otherwise burn the whole budget. Pure.
 */
import type { MetaDecision } from './types.js';

/** Counts how many iterations in a row were the same. */
export class StallCounter {
  private lastKey: string | null = null;
  private repeats = 0;

  /** Notes one iteration; returns how many in a row (this one included) were the same as it. */
  observe(decision: MetaDecision, evidenceFingerprint: string, refusals: readonly string[]): number {
    const key = JSON.stringify([
      decision.action,
      decision.workerCall?.prompt ?? decision.question ?? '',
      evidenceFingerprint,
      refusals,
    ]);
    this.repeats = key === this.lastKey ? this.repeats + 1 : 1;
    this.lastKey = key;
    return this.repeats;
  }
}

/** What the stall was, in words (the `stalled` event's `what`; the task's reason is `stalled: <what>`). */
export function stallDescription(
  decision: MetaDecision,
  repeats: number,
  refusals: readonly string[],
): string {
  return (
    `the Meta-agent decided ${decision.action} ${repeats} times in a row with no change in the facts` +
    (refusals.length ? ` (each time: ${refusals.join('; ')})` : '')
  );
}
