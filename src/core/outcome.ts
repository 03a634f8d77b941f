/**
 * How a task ends, as a coded value: each step of the loop returns either "go on" or one of these, and the
 * terminal state, the reason and the exit code are derived from the code here. Pure.
 */
import { EXIT_CODES, type AgentRunnerError } from '../errors.js';
import { limitMessage, type LimitReason } from './limits.js';
import { refusalMessage, type Refusal } from './refusal.js';

export type TaskOutcome =
  /** The completion gate let it through; `reason` is the Meta-agent's (or its assessment's) summary. */
  | { code: 'complete'; reason: string }
  | { code: 'aborted'; reason: string }
  /** The Meta-agent asked a question nobody answered (headless, or the person gave no answer). */
  | { code: 'question'; question: string }
  | { code: 'limit'; limit: LimitReason }
  | { code: 'stalled'; what: string }
  /** Only evidence no worker run can create is missing. */
  | { code: 'no_evidence'; refusals: readonly Refusal[] }
  /** The gateway refused the worker's model requests: the budget is spent (its words). */
  | { code: 'budget_spent'; reason: string }
  | { code: 'interrupted' }
  | { code: 'error'; error: AgentRunnerError };

/** What a step of the loop says happens next. */
export type Next = { kind: 'continue'; refusals: string[] } | { kind: 'stop'; outcome: TaskOutcome };

export const goOn = (refusals: string[] = []): Next => ({ kind: 'continue', refusals });
export const stop = (outcome: TaskOutcome): Next => ({ kind: 'stop', outcome });

export type TerminalState = 'COMPLETE' | 'FAILED' | 'NEEDS_REVIEW';

export function outcomeState(outcome: TaskOutcome): TerminalState {
  switch (outcome.code) {
    case 'complete':
      return 'COMPLETE';
    case 'aborted':
    case 'error':
      return 'FAILED';
    default:
      return 'NEEDS_REVIEW';
  }
}

export function outcomeReason(outcome: TaskOutcome): string {
  switch (outcome.code) {
    case 'complete':
      return outcome.reason;
    case 'aborted':
      return `the Meta-agent aborted: ${outcome.reason}`;
    case 'question':
      return `the Meta-agent needs an answer: ${outcome.question}`;
    case 'limit':
      return limitMessage(outcome.limit);
    case 'stalled':
      return `stalled: ${outcome.what}`;
    case 'no_evidence':
      return outcome.refusals.map(refusalMessage).join('; ');
    case 'budget_spent':
      return outcome.reason;
    case 'interrupted':
      return 'interrupted';
    case 'error':
      return outcome.error.message;
  }
}

export function outcomeExitCode(outcome: TaskOutcome): number {
  switch (outcome.code) {
    case 'complete':
      return EXIT_CODES.complete;
    case 'aborted':
      return EXIT_CODES.failed;
    case 'limit':
      return outcome.limit.code === 'wall_clock' ? EXIT_CODES.timeout : EXIT_CODES.needsReview;
    case 'interrupted':
      return EXIT_CODES.interrupted;
    case 'error':
      return outcome.error.exitCode;
    default:
      return EXIT_CODES.needsReview;
  }
}
