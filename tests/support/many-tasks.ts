/**
 * Many tasks in a repository's state directory without running one: each a run folder with a small journal
 * (task_started, transitions, and for an ended one its last state), created one second apart (oldest first),
 * in the states given in turn. And one long journal of a single task. For the list's and the event stream's
 * tests and `npm run bench:lists`; the journals are what `TaskBoard` reads, written as the runner writes them.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { StampedEvent } from '../../src/core/events.js';

export const MANY_STATES = ['COMPLETE', 'FAILED', 'NEEDS_REVIEW', 'RUNNING'] as const;

/** The id of the `index`-th task (zero-padded, so ids sort as numbers do). */
export const manyTaskId = (index: number) => `T-${String(index).padStart(5, '0')}`;

/** When the `index`-th task started: one second after the one before it. */
export const manyTaskCreated = (index: number) => new Date(Date.UTC(2026, 0, 1) + index * 1000).toISOString();

function startEvent(taskId: string, at: string): StampedEvent {
  return {
    type: 'task_started',
    taskId,
    branch: `agent-runner/${taskId}`,
    baseSha: '0'.repeat(40),
    worktreePath: `/nowhere/${taskId}`,
    dirtyStart: false,
    at,
  } as StampedEvent;
}

/** Writes tasks `from` .. `from + count - 1` under `repoRoot`'s state directory. */
export function writeManyTasks(repoRoot: string, count: number, from = 0): void {
  for (let index = from; index < from + count; index += 1) {
    const taskId = manyTaskId(index);
    const at = manyTaskCreated(index);
    const state = MANY_STATES[index % MANY_STATES.length] as (typeof MANY_STATES)[number];
    const runDir = path.join(repoRoot, '.agent-runner', 'runs', taskId);
    mkdirSync(runDir, { recursive: true });
    const events: StampedEvent[] = [
      startEvent(taskId, at),
      { type: 'transition', from: 'PENDING', to: 'PLANNING', at },
      { type: 'transition', from: 'PLANNING', to: 'RUNNING', at },
    ];
    if (state !== 'RUNNING') events.push({ type: 'transition', from: 'RUNNING', to: state, at });
    writeFileSync(
      path.join(runDir, 'events.jsonl'),
      events.map((event) => `${JSON.stringify(event)}\n`).join(''),
    );
  }
}

/**
 * A task whose journal holds `count` events (its start, then transitions whose reason is `reason(n)`): the
 * byte offset past each line, in order, is returned (the stream's positions).
 */
export function writeLongJournal(
  repoRoot: string,
  taskId: string,
  count: number,
  reason: (n: number) => string = (n) => `step ${n}`,
): number[] {
  const runDir = path.join(repoRoot, '.agent-runner', 'runs', taskId);
  mkdirSync(runDir, { recursive: true });
  const file = path.join(runDir, 'events.jsonl');
  const at = new Date(Date.UTC(2026, 0, 2)).toISOString();
  const lines = [`${JSON.stringify(startEvent(taskId, at))}\n`];
  for (let n = 1; n < count; n += 1)
    lines.push(
      `${JSON.stringify({ type: 'transition', from: 'RUNNING', to: 'RUNNING', reason: reason(n), at })}\n`,
    );
  writeFileSync(file, '');
  const positions: number[] = [];
  let offset = 0;
  const CHUNK = 5_000;
  for (let start = 0; start < lines.length; start += CHUNK) {
    const part = lines.slice(start, start + CHUNK);
    for (const line of part) {
      offset += Buffer.byteLength(line);
      positions.push(offset);
    }
    appendFileSync(file, part.join(''));
  }
  return positions;
}
