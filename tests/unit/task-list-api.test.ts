/**
 * `GET /api/tasks` paged and filtered over the real board (its journals in a state directory, no sandbox): pages
 * that add up to the whole list, a cursor that holds while tasks are created, state and node filters, and a
 * 400 naming the parameter for every bad limit, cursor or filter.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { Redaction } from '../../src/notes/redact.js';
import { createApi } from '../../src/serve/http-api.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '../../src/serve/task-list-query.js';
import { MANY_STATES, manyTaskId, writeManyTasks } from '../support/many-tasks.js';

const token = 'list-token';
const COUNT = 120;
let dir = '';
let board: TaskBoard;
let app: ReturnType<typeof createApi>;

interface Page {
  tasks: { taskId: string; state: string | null }[];
  next: string | null;
  more: boolean;
}

async function get(query: string): Promise<{ status: number; body: Page & { error?: { field?: string } } }> {
  const response = await app.request(`/api/tasks${query}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as Page & { error?: { field?: string } } };
}

/** Every page from `query` on, following `next`. */
async function allPages(query: string): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | null = '';
  while (cursor !== null) {
    const { status, body }: { status: number; body: Page } = await get(
      `${query}${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(status).toBe(200);
    pages.push(body);
    cursor = body.next;
    expect(body.more).toBe(cursor !== null);
  }
  return pages;
}

const newestFirst = (count: number, from = 0) =>
  Array.from({ length: count }, (_, index) => manyTaskId(from + count - 1 - index));

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'ar-task-list-'));
  writeManyTasks(dir, COUNT);
  const redaction = new Redaction();
  board = new TaskBoard(dir, createApp(process.env, {}, redaction), process.env);
  app = createApi(board, { token, redaction });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the task list, paged', () => {
  it('gives the default page, then pages that add up to every task, newest first, none twice', async () => {
    const first = await get('');
    expect(first.status).toBe(200);
    expect(first.body.tasks.map((task) => task.taskId)).toEqual(
      newestFirst(COUNT).slice(0, LIST_LIMIT_DEFAULT),
    );
    expect(first.body.more).toBe(true);

    const pages = await allPages('?limit=50');
    expect(pages.map((page) => page.tasks.length)).toEqual([50, 50, 20]);
    expect(pages.flatMap((page) => page.tasks.map((task) => task.taskId))).toEqual(newestFirst(COUNT));
    expect((await get(`?limit=${LIST_LIMIT_MAX}`)).body).toMatchObject({ next: null, more: false });
  });

  it('keeps its place while tasks are created: the next page is the one it would have been', async () => {
    const first = await get('?limit=10');
    const second = await get(`?limit=10&cursor=${first.body.next}`);
    writeManyTasks(dir, 5, COUNT); // five newer tasks, from a terminal
    await board.list(); // the index has seen them
    const again = await get(`?limit=10&cursor=${first.body.next}`);
    expect(again.body.tasks).toEqual(second.body.tasks);
    const top = await get('?limit=10');
    expect(top.body.tasks.slice(0, 5).map((task) => task.taskId)).toEqual(newestFirst(5, COUNT));
  });

  it('filters by state (one or more, repeated or comma-separated) and by node, across pages', async () => {
    const complete = (await allPages('?limit=7&state=COMPLETE')).flatMap((page) => page.tasks);
    expect(complete.length).toBeGreaterThan(25);
    expect(new Set(complete.map((task) => task.state))).toEqual(new Set(['COMPLETE']));
    const two = (await allPages('?limit=500&state=complete,FAILED')).flatMap((page) => page.tasks);
    const repeated = (await allPages('?limit=500&state=COMPLETE&state=failed')).flatMap((page) => page.tasks);
    expect(repeated).toEqual(two);
    expect(new Set(two.map((task) => task.state))).toEqual(new Set(['COMPLETE', 'FAILED']));
    const all = (await get('?limit=500')).body.tasks;
    expect(two.length).toBe(all.filter((task) => ['COMPLETE', 'FAILED'].includes(task.state ?? '')).length);
    expect(MANY_STATES).toContain('RUNNING');
    // A plain server's tasks run on no node of a fleet.
    expect((await get('?node=node-a')).body).toMatchObject({ tasks: [], next: null, more: false });
  });

  it('is described in the OpenAPI document with the bounds the server applies', async () => {
    const response = await app.request('/api/openapi.json', {
      headers: { authorization: `Bearer ${token}` },
    });
    const document = (await response.json()) as {
      paths: Record<string, { get: { parameters: { name: string; schema: Record<string, unknown> }[] } }>;
    };
    const parameters = document.paths['/api/tasks']?.get.parameters ?? [];
    expect(parameters.map((parameter) => parameter.name)).toEqual(['limit', 'cursor', 'state', 'node']);
    expect(parameters[0]?.schema).toMatchObject({ maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_DEFAULT });
    const events = document.paths['/api/tasks/{id}/events']?.get.parameters ?? [];
    expect(events.map((parameter) => parameter.name)).toEqual(['id', 'Last-Event-ID', 'after', 'follow']);
    expect((await get(`?limit=${LIST_LIMIT_MAX}`)).status).toBe(200);
    expect((await get(`?limit=${LIST_LIMIT_MAX + 1}`)).status).toBe(400);
  });

  it.each([
    ['?limit=0', 'limit'],
    ['?limit=501', 'limit'],
    ['?limit=ten', 'limit'],
    ['?limit=5&limit=6', 'limit'],
    ['?cursor=not-a-cursor!', 'cursor'],
    [`?cursor=${Buffer.from('{"t":["yesterday","T-1"]}').toString('base64url')}`, 'cursor'],
    [`?cursor=${Buffer.from('{"t":["2026-01-01T00:00:00.000Z","../x"]}').toString('base64url')}`, 'cursor'],
    [`?cursor=${Buffer.from('[1,2]').toString('base64url')}`, 'cursor'],
    ['?state=%3Cscript%3E', 'state'],
    ['?node=a%20b', 'node'],
  ])('refuses %s with a 400 naming %s', async (query, field) => {
    const { status, body } = await get(query);
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: 'invalid_field', field });
  });
});
