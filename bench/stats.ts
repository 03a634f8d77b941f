/** Small statistics and timing helpers for the benchmarks. */

/** The median of `values` (the mean of the two middle values for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The `p`-th percentile (0..100) by nearest rank; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Summary of one series of samples, in milliseconds. */
export interface SampleSummary {
  count: number;
  medianMs: number;
  p90Ms: number;
  minMs: number;
  maxMs: number;
  samplesMs: number[];
}

export function summarize(samples: readonly number[]): SampleSummary {
  return {
    count: samples.length,
    medianMs: round(median(samples)),
    p90Ms: round(percentile(samples, 90)),
    minMs: round(Math.min(...samples)),
    maxMs: round(Math.max(...samples)),
    samplesMs: samples.map(round),
  };
}

/** Rounds to two decimals (enough for milliseconds, keeps the JSON readable). */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Wall time of `action` in milliseconds, with its result. */
export async function timed<T>(action: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const startedAt = performance.now();
  const value = await action();
  return { ms: performance.now() - startedAt, value };
}
