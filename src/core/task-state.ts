/**
 * The task's state machine as data. `transition(state, event)` is pure and refuses anything not in the table.
 *
 *   PENDING ─start─► PLANNING ─planned─► RUNNING ─validate─► VALIDATING ─complete─► COMPLETE
 *                                           ▲                     │
 *                                           └──retry── FIXING ◄─fix┘
 *   any non-terminal state ─fail─► FAILED, ─needs_review─► NEEDS_REVIEW
 */

export const TASK_STATES = [
  'PENDING',
  'PLANNING',
  'RUNNING',
  'VALIDATING',
  'FIXING',
  'COMPLETE',
  'FAILED',
  'NEEDS_REVIEW',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TERMINAL_STATES: readonly TaskState[] = ['COMPLETE', 'FAILED', 'NEEDS_REVIEW'];

export type TaskEvent =
  | { type: 'start' }
  | { type: 'planned' }
  | { type: 'validate' }
  | { type: 'complete' }
  | { type: 'fix'; reasons: string[] }
  | { type: 'retry' }
  | { type: 'fail'; reason: string }
  | { type: 'needs_review'; reason: string };

export type TaskEventType = TaskEvent['type'];
export const TASK_EVENT_TYPES: readonly TaskEventType[] = [
  'start',
  'planned',
  'validate',
  'complete',
  'fix',
  'retry',
  'fail',
  'needs_review',
];

const TABLE: Record<TaskState, Partial<Record<TaskEventType, TaskState>>> = {
  PENDING: { start: 'PLANNING', fail: 'FAILED', needs_review: 'NEEDS_REVIEW' },
  PLANNING: { planned: 'RUNNING', fail: 'FAILED', needs_review: 'NEEDS_REVIEW' },
  RUNNING: { validate: 'VALIDATING', fail: 'FAILED', needs_review: 'NEEDS_REVIEW' },
  VALIDATING: { complete: 'COMPLETE', fix: 'FIXING', fail: 'FAILED', needs_review: 'NEEDS_REVIEW' },
  FIXING: { retry: 'RUNNING', fail: 'FAILED', needs_review: 'NEEDS_REVIEW' },
  COMPLETE: {},
  FAILED: {},
  NEEDS_REVIEW: {},
};

export class InvalidTransitionError extends Error {
  constructor(
    readonly from: TaskState,
    readonly event: TaskEventType,
  ) {
    super(`No transition from ${from} on ${event}`);
    this.name = 'InvalidTransitionError';
  }
}

/** The next state, or InvalidTransitionError. */
export function transition(state: TaskState, event: TaskEvent): TaskState {
  const next = TABLE[state][event.type];
  if (!next) throw new InvalidTransitionError(state, event.type);
  return next;
}

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.includes(state);
}

/** Every allowed (state, event type, next state) triple, for tests and docs. */
export function allowedTransitions(): [TaskState, TaskEventType, TaskState][] {
  return TASK_STATES.flatMap((state) =>
    Object.entries(TABLE[state]).map(
      ([event, next]) => [state, event as TaskEventType, next] as [TaskState, TaskEventType, TaskState],
    ),
  );
}
