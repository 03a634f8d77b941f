import { describe, expect, it } from 'vitest';
import {
  InvalidTransitionError,
  TASK_EVENT_TYPES,
  TASK_STATES,
  allowedTransitions,
  isTerminal,
  transition,
  type TaskEvent,
  type TaskEventType,
  type TaskState,
} from '../../src/core/task-state.js';

const eventOf = (type: TaskEventType): TaskEvent =>
  type === 'fix'
    ? { type, reasons: ['x'] }
    : type === 'fail' || type === 'needs_review'
      ? { type, reason: 'x' }
      : ({ type } as TaskEvent);

const EXPECTED: [TaskState, TaskEventType, TaskState][] = [
  ['PENDING', 'start', 'PLANNING'],
  ['PLANNING', 'planned', 'RUNNING'],
  ['RUNNING', 'validate', 'VALIDATING'],
  ['VALIDATING', 'complete', 'COMPLETE'],
  ['VALIDATING', 'fix', 'FIXING'],
  ['FIXING', 'retry', 'RUNNING'],
  ...(['PENDING', 'PLANNING', 'RUNNING', 'VALIDATING', 'FIXING'] as TaskState[]).flatMap(
    (state): [TaskState, TaskEventType, TaskState][] => [
      [state, 'fail', 'FAILED'],
      [state, 'needs_review', 'NEEDS_REVIEW'],
    ],
  ),
];

const key = ([state, event]: [TaskState, TaskEventType, TaskState?]) => `${state}:${event}`;
const allowedKeys = new Set(EXPECTED.map(key));
const refused = TASK_STATES.flatMap((state) =>
  TASK_EVENT_TYPES.map((event) => [state, event] as [TaskState, TaskEventType]),
).filter((pair) => !allowedKeys.has(key(pair)));

describe('task state machine', () => {
  it('has exactly the documented table', () => {
    expect(new Set(allowedTransitions().map((triple) => triple.join(':')))).toEqual(
      new Set(EXPECTED.map((triple) => triple.join(':'))),
    );
  });

  it.each(EXPECTED)('%s --%s--> %s', (state, event, next) => {
    expect(transition(state, eventOf(event))).toBe(next);
  });

  it.each(refused)('refuses %s on %s', (state, event) => {
    expect(() => transition(state, eventOf(event))).toThrow(InvalidTransitionError);
  });

  it('knows the terminal states', () => {
    expect(TASK_STATES.filter(isTerminal)).toEqual(['COMPLETE', 'FAILED', 'NEEDS_REVIEW']);
  });
});
