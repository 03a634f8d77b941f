/**
 * A task's event stream resumed from the id of any event it sent: exactly the events after it, none twice, none
 * lost, the id being the byte offset past the line (also right after lines holding multi-byte characters, which
 * a count of characters would get wrong); `?after=` as the header. A position that is garbage, past the end,
 * inside a line, or of another task's stream is a 400 naming Last-Event-ID.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { Redaction } from '../../src/notes/redact.js';
import { formatEventPosition } from '../../src/serve/event-position.js';
import { createApi } from '../../src/serve/http-api.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { writeLongJournal } from '../support/many-tasks.js';

const token = 'stream-token';
const TASK = 'LONG-1';
const OTHER = 'LONG-2';
const COUNT = 600;
let dir = '';
let positions: number[] = [];
let app: ReturnType<typeof createApi>;

/** Every third reason has characters of two, three and four bytes. */
const reason = (n: number) => (n % 3 === 0 ? `étape ${n} ✓ 😀` : `step ${n}`);

async function stream(headers: Record<string, string> = {}, query = '') {
  const response = await app.request(`/api/tasks/${TASK}/events?follow=0${query}`, {
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
  if (response.status !== 200)
    return {
      status: response.status,
      events: [],
      error: (await response.json()) as { error: { field: string } },
    };
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  parser.feed(await response.text());
  return { status: 200, events, error: null };
}

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'ar-event-stream-'));
  positions = writeLongJournal(dir, TASK, COUNT, reason);
  writeLongJournal(dir, OTHER, 10);
  const redaction = new Redaction();
  app = createApi(new TaskBoard(dir, createApp(process.env, {}, redaction), process.env), {
    token,
    redaction,
  });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the event stream of a long journal', () => {
  it('names each event by the byte offset past its line, and resumes after any of them', async () => {
    const whole = await stream();
    const journal = whole.events.filter((event) => event.event === 'journal');
    expect(journal).toHaveLength(COUNT);
    expect(journal.map((event) => event.id)).toEqual(
      positions.map((offset) => formatEventPosition(TASK, 'offset', offset)),
    );
    expect(whole.events.at(-1)?.event).toBe('end');
    // After the first, a multi-byte line (n = 3), the line after it, one in the middle, the next to last, the last.
    for (const k of [0, 3, 4, 299, COUNT - 2, COUNT - 1]) {
      const resumed = await stream({ 'last-event-id': journal[k]?.id ?? '' });
      const rest = resumed.events.filter((event) => event.event === 'journal');
      expect(rest.map((event) => event.id)).toEqual(journal.slice(k + 1).map((event) => event.id));
      expect(rest.map((event) => event.data)).toEqual(journal.slice(k + 1).map((event) => event.data));
      expect(resumed.events.at(-1)?.event).toBe('end');
    }
    expect(journal[3]?.data).toContain('😀');
    const viaQuery = await stream({}, `&after=${encodeURIComponent(journal[10]?.id ?? '')}`);
    expect(viaQuery.events.filter((event) => event.event === 'journal')[0]?.id).toBe(journal[11]?.id);
  });

  it.each([
    ['garbage', 'DROP TABLE'],
    ['a line number of old', '42'],
    ['past the end', formatEventPosition(TASK, 'offset', (positions.at(-1) ?? 0) + 1)],
    ['inside a line', formatEventPosition(TASK, 'offset', (positions[5] ?? 0) - 3)],
    ['of another task', formatEventPosition(OTHER, 'offset', positions[0] ?? 0)],
    ['a tag that is not hex', `o${positions[0]}.zzzzzzzz`],
  ])('refuses a position that is %s with a 400', async (_what, id) => {
    const refused = await stream({ 'last-event-id': id });
    expect(refused.status).toBe(400);
    expect(refused.error?.error).toMatchObject({ code: 'invalid_field', field: 'Last-Event-ID' });
  });
});
