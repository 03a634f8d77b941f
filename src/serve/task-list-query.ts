/**
 * Paging and filters of `GET /api/tasks`: `limit` (default {@link LIST_LIMIT_DEFAULT}, at most
 * {@link LIST_LIMIT_MAX}), `cursor` (the `next` of the page before), `state` and `node` (each repeatable or
 * comma-separated: any of them). Tasks come newest first, ordered by (created, id): a cursor is the key of the
 * last task a page held, so a page after it holds the tasks created before it, whatever was created since
 * (new tasks go on page one, never push a task from one page onto the next). On a node of a fleet the answer
 * has two lists (this server's `tasks`, the database's `fleet`); one cursor carries where each stopped.
 * Everything here is client input: a value that is not one of these is a 400 naming the parameter.
 */
import * as z from 'zod';
import { taskIdParamSchema } from './api-schemas.js';

export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 500;

/** Where a list stopped: the last task it gave (its created time as the list orders it, and its id). */
export interface ListKey {
  createdAt: string;
  taskId: string;
}

/** Where each list of the answer stopped; `end`: that list has nothing more; absent: from its start. */
export interface ListCursor {
  tasks?: ListKey | 'end';
  fleet?: ListKey | 'end';
}

export interface TaskListQuery {
  limit: number;
  cursor: ListCursor;
  /** Any of these states (upper case); null: every state. */
  states: string[] | null;
  /** Any of these nodes (a fleet's node ids); null: every node. */
  nodes: string[] | null;
}

/** A parameter the client got wrong (the API's 400 `invalid_field`, naming it). */
export class ListQueryError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'ListQueryError';
  }
}

// A created time as the lists give it: ISO 8601 from a journal, or PostgreSQL's text of a timestamptz (its
// microseconds kept, so a page boundary between two tasks of the same millisecond holds).
const createdAtSchema = z
  .string()
  .regex(/^$|^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d(:?\d\d)?)$/);
const keySchema = z.union([z.literal(0), z.tuple([createdAtSchema, taskIdParamSchema])]);
const cursorSchema = z.strictObject({ t: keySchema.optional(), f: keySchema.optional() });

function encodeKey(key: ListKey | 'end' | undefined): [string, string] | 0 | undefined {
  if (key === undefined) return undefined;
  return key === 'end' ? 0 : [key.createdAt, key.taskId];
}

function decodeKey(key: z.infer<typeof keySchema> | undefined): ListKey | 'end' | undefined {
  if (key === undefined) return undefined;
  return key === 0 ? 'end' : { createdAt: key[0], taskId: key[1] };
}

/** The opaque text of a cursor (base64url of a small JSON); null when every list has ended (no next page). */
export function encodeCursor(cursor: ListCursor): string | null {
  if ((cursor.tasks ?? 'end') === 'end' && (cursor.fleet ?? 'end') === 'end') return null;
  const value = { t: encodeKey(cursor.tasks), f: encodeKey(cursor.fleet) };
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeCursor(text: string): ListCursor {
  let parsed: z.infer<typeof cursorSchema>;
  try {
    if (!/^[A-Za-z0-9_-]{1,1024}$/.test(text)) throw new Error('not base64url');
    parsed = cursorSchema.parse(JSON.parse(Buffer.from(text, 'base64url').toString('utf8')));
  } catch {
    throw new ListQueryError(
      'cursor',
      'not a cursor of this server: give the `next` of the page before, or no cursor for the first page.',
    );
  }
  const tasks = decodeKey(parsed.t);
  const fleet = decodeKey(parsed.f);
  return { ...(tasks !== undefined ? { tasks } : {}), ...(fleet !== undefined ? { fleet } : {}) };
}

/** The values of a repeatable parameter (`state=A&state=B` or `state=A,B`), checked by `pattern`. */
function listValues(field: string, given: string[] | undefined, pattern: RegExp): string[] | null {
  if (given === undefined || given.length === 0) return null;
  const values = given.flatMap((value) => value.split(',')).filter((value) => value !== '');
  if (values.length > 32) throw new ListQueryError(field, 'at most 32 values.');
  for (const value of values)
    if (!pattern.test(value))
      throw new ListQueryError(field, `${JSON.stringify(value.slice(0, 40))} is not one.`);
  return values.length === 0 ? null : [...new Set(values)];
}

/** The query of `GET /api/tasks` from its parameters (`queries(name)`: every value given for `name`). */
export function parseListQuery(queries: (name: string) => string[] | undefined): TaskListQuery {
  const [limitText, ...moreLimits] = queries('limit') ?? [];
  const [cursorText, ...moreCursors] = queries('cursor') ?? [];
  if (moreLimits.length > 0) throw new ListQueryError('limit', 'give it once.');
  if (moreCursors.length > 0) throw new ListQueryError('cursor', 'give it once.');
  let limit = LIST_LIMIT_DEFAULT;
  if (limitText !== undefined) {
    if (!/^[0-9]{1,4}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > LIST_LIMIT_MAX)
      throw new ListQueryError('limit', `a whole number from 1 to ${LIST_LIMIT_MAX}.`);
    limit = Number(limitText);
  }
  const states = listValues('state', queries('state'), /^[A-Za-z_]{1,32}$/);
  return {
    limit,
    cursor: cursorText === undefined || cursorText === '' ? {} : decodeCursor(cursorText),
    states: states?.map((state) => state.toUpperCase()) ?? null,
    nodes: listValues('node', queries('node'), /^[A-Za-z0-9._:@-]{1,128}$/),
  };
}

/** Whether `a` comes before `b` in the list (newer first; the same created time: the greater id first). */
export function listsBefore(a: ListKey, b: ListKey): boolean {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt;
  return a.taskId > b.taskId;
}

/**
 * One page of a list held in memory, already in list order: the tasks after `after` (absent: from the first),
 * at most `limit`, and where the next page starts (`end` when there is none).
 */
export function pageOf<T>(
  items: readonly T[],
  keyOf: (item: T) => ListKey,
  after: ListKey | 'end' | undefined,
  limit: number,
): { items: T[]; next: ListKey | 'end' } {
  if (after === 'end') return { items: [], next: 'end' };
  let start = 0;
  if (after !== undefined) {
    // Binary search: the first item that comes after the key (the list is sorted by it).
    let high = items.length;
    while (start < high) {
      const middle = (start + high) >>> 1;
      if (listsBefore(keyOf(items[middle] as T), after) || sameKey(keyOf(items[middle] as T), after))
        start = middle + 1;
      else high = middle;
    }
  }
  const page = items.slice(start, start + limit);
  const last = page.at(-1);
  return { items: page, next: start + limit < items.length && last !== undefined ? keyOf(last) : 'end' };
}

function sameKey(a: ListKey, b: ListKey): boolean {
  return a.createdAt === b.createdAt && a.taskId === b.taskId;
}
