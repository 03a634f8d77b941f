/**
 * Test counts in words, as the note, the progress and the summary show them. The counts are read from a
 * check's output by src/workspace/checks/test-counts.ts; they are evidence for a person, never gated on.
 */
import type { TestCounts } from './types.js';

/** Counts in words, as the note, the progress and the summary show them: `42 passed, 1 failed, 1 skipped`. */
export function testCountsText(counts: TestCounts): string {
  const parts = [`${counts.passed} passed`];
  if (counts.failed > 0) parts.push(`${counts.failed} failed`);
  if (counts.skipped > 0) parts.push(`${counts.skipped} skipped`);
  return parts.join(', ');
}

/**
 * What follows a check's status wherever it is shown: its exit code (when given) and its test counts, e.g.
 * ` (exit 1; 40 passed, 2 failed)` or ` (42 passed, 1 skipped)`; empty when there is neither.
 */
export function checkDetailText(exitCode: number | null | undefined, tests: TestCounts | undefined): string {
  const parts = [
    ...(exitCode === null || exitCode === undefined ? [] : [`exit ${exitCode}`]),
    ...(tests ? [testCountsText(tests)] : []),
  ];
  return parts.length > 0 ? ` (${parts.join('; ')})` : '';
}
