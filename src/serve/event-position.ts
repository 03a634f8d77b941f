/**
 * The id of each event of a task's stream (`GET /api/tasks/{id}/events`): a position the server resumes from
 * without reading the journal from its start. A local journal's position is the byte offset just past the
 * line (`o<offset>`): the server opens the file there. A fleet task's line read from the database is its `seq`
 * (`l<seq>`): the events table's primary key (task_id, seq) finds the next line. Both carry a tag of the task
 * (8 hex digits of SHA-256 of its id), so a position of another task's stream is refused rather than read
 * from. A client's `Last-Event-ID` (or `?after=`) is attacker input: anything that is not a position this
 * server could have sent for this task is a 400 that says how to start over.
 */
import { createHash } from 'node:crypto';

export type EventPositionKind = 'offset' | 'line';

export interface EventPosition {
  kind: EventPositionKind;
  /** The byte offset (kind `offset`) or the line's seq (kind `line`). */
  value: number;
}

/** Why a given position is refused (the API's 400 `invalid_field`, field `Last-Event-ID`). */
export class EventPositionError extends Error {
  constructor(reason: string) {
    super(
      `Last-Event-ID: ${reason}. Send an id this stream sent for this task, or none to read the task's ` +
        'events from the start.',
    );
    this.name = 'EventPositionError';
  }
}

const PREFIX: Record<EventPositionKind, string> = { offset: 'o', line: 'l' };
const POSITION = /^([ol])(0|[1-9][0-9]{0,14})\.([0-9a-f]{8})$/;

function taskTag(taskId: string): string {
  return createHash('sha256').update(taskId).digest('hex').slice(0, 8);
}

/** The SSE id of the event that ends at `value`. */
export function formatEventPosition(taskId: string, kind: EventPositionKind, value: number): string {
  return `${PREFIX[kind]}${value}.${taskTag(taskId)}`;
}

/**
 * A client's resume point: null when none was given (from the start), else the position it names; throws
 * {@link EventPositionError} for text that is no position, or a position of another task. Whether it lies
 * within the journal is the reader's check (it knows the file or the table).
 */
export function parseEventPosition(taskId: string, given: string | undefined): EventPosition | null {
  if (given === undefined || given === '') return null;
  const match = POSITION.exec(given);
  if (match === null) throw new EventPositionError('not a position of this server (o<offset>.<tag>)');
  const [, prefix, digits, tag] = match as unknown as [string, string, string, string];
  const value = Number(digits);
  if (!Number.isSafeInteger(value)) throw new EventPositionError('the position is out of range');
  if (tag !== taskTag(taskId)) throw new EventPositionError("a position of another task's stream");
  return { kind: prefix === 'o' ? 'offset' : 'line', value };
}
