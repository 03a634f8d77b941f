/** Types of ci-outcome.mjs for the tests that import it. */
export interface CiOutcome {
  exit: number;
  level: 'notice' | 'warning' | 'error';
  outcome: 'complete' | 'needs-review' | 'delivery-failed' | 'failed';
}

export declare function outcomeOf(exitCode: number, needsReview: 'fail' | 'neutral'): CiOutcome;

export declare function messageOf(result: {
  summary: Record<string, unknown> | undefined;
  stderrTail: string;
  exitCode: number;
}): string;
