/**
 * The fleet's task list on a real PostgreSQL with 10,000 tasks: pages through the keyset cursor add up to every
 * task in order (ties of created_at, down to the microsecond, broken by id), a cursor holds while tasks are
 * queued, state and node filters; EXPLAIN shows each page (the first, a deep one, filtered by a state or a node)
 * is an index scan, not a scan of the table. And through the API of a pure node: the `fleet` list paged with
 * the same cursor, and another node's task's event stream resumed after a line's seq (past the last: a 400).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { controlUrl } from '../../src/control/control-url.js';
import { openControlDatabase, type ControlDatabase } from '../../src/control/control-database.js';
import { FleetEventFeed, fleetTaskSource } from '../../src/control/fleet-events.js';
import { fleetListSql, listFleetTasks, type FleetListQuery } from '../../src/control/fleet-tasks.js';
import { migrateControl } from '../../src/control/migrate-control.js';
import { Redaction } from '../../src/notes/redact.js';
import { formatEventPosition } from '../../src/serve/event-position.js';
import { createApi } from '../../src/serve/http-api.js';
import { PureNodeBoard } from '../../src/serve/pure-node-board.js';
import { createTestDatabase, type TestDatabase } from '../support/control-database.js';

const COUNT = 10_000;
const NODES = ['node-a', 'node-b', 'node-c'];
const STATES = ['COMPLETE', 'FAILED', 'RUNNING', 'QUEUED'];
let db: TestDatabase;
let admin: ControlDatabase;
let node: ControlDatabase;
let feed: FleetEventFeed;
let dir = '';

beforeAll(async () => {
  db = await createTestDatabase();
  admin = await openControlDatabase(controlUrl(db.url, new Redaction()));
  await migrateControl(admin, { nodePassword: db.nodePassword });
  node = await openControlDatabase(controlUrl(db.nodeUrl, new Redaction()));
  for (const id of NODES)
    await admin.pool.query(
      `INSERT INTO agent_runner.nodes (id, host, pid, capacity) VALUES ($1, 'h.example', 1, 1)`,
      [id],
    );
  // Pairs of tasks share a created_at (a microsecond apart from the next pair): the id breaks the tie.
  await admin.pool.query(
    `INSERT INTO agent_runner.tasks (id, repo_url, prd, state, node_id, created_at)
     SELECT 'F-' || lpad(i::text, 5, '0'), 'https://git.example/r.git', '# P',
            ($1::text[])[1 + i % 4], CASE WHEN i % 4 = 3 THEN NULL ELSE ($2::text[])[1 + i % 3] END,
            timestamptz '2026-01-01 00:00:00+00' + (i / 2) * interval '1 microsecond'
       FROM generate_series(0, $3 - 1) AS i`,
    [STATES, NODES, COUNT],
  );
  await admin.pool.query('ANALYZE agent_runner.tasks');
  dir = mkdtempSync(path.join(os.tmpdir(), 'ar-fleet-list-'));
  feed = new FleetEventFeed(node);
  await feed.start();
}, 600_000);

afterAll(async () => {
  await feed?.close();
  for (const database of [node, admin]) await database?.close();
  await db?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const expected = async (where = 'TRUE', values: unknown[] = []) =>
  (
    await admin.pool.query<{ id: string }>(
      `SELECT id FROM agent_runner.tasks WHERE ${where} ORDER BY created_at DESC, id DESC`,
      values,
    )
  ).rows.map((row) => row.id);

async function everyPage(query: Omit<FleetListQuery, 'after'>): Promise<string[][]> {
  const pages: string[][] = [];
  let after: FleetListQuery['after'];
  for (;;) {
    const page = await listFleetTasks(node, { ...query, ...(after ? { after } : {}) });
    pages.push(page.tasks.map((task) => task.taskId));
    if (page.next === 'end') return pages;
    after = page.next;
  }
}

describe("the fleet's task list", () => {
  it('pages through 10,000 tasks in order, ties and microseconds kept, each task once', async () => {
    const pages = await everyPage({ limit: 500, states: null, nodes: null });
    expect(pages).toHaveLength(COUNT / 500);
    expect(pages.flat()).toEqual(await expected());
  });

  it('filters by state and node, across pages', async () => {
    const failed = (await everyPage({ limit: 300, states: ['FAILED'], nodes: null })).flat();
    expect(failed).toEqual(await expected(`state = 'FAILED'`));
    const both = (await everyPage({ limit: 300, states: ['COMPLETE', 'RUNNING'], nodes: ['node-b'] })).flat();
    expect(both).toEqual(await expected(`state IN ('COMPLETE', 'RUNNING') AND node_id = 'node-b'`));
    expect(both.length).toBeGreaterThan(100);
  });

  it('is an index scan for the first page, a deep page, a state and a node', async () => {
    const deep = await listFleetTasks(node, { limit: 9_000, states: null, nodes: null });
    expect(deep.next).not.toBe('end');
    const after = deep.next === 'end' ? undefined : deep.next;
    for (const query of [
      { limit: 50, states: null, nodes: null },
      { limit: 50, states: null, nodes: null, after },
      { limit: 50, states: ['FAILED'], nodes: null, after },
      { limit: 50, states: null, nodes: ['node-c'], after },
    ] as FleetListQuery[]) {
      const { sql, values } = fleetListSql(query);
      const plan = (await node.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, values)).rows
        .map((row) => row['QUERY PLAN'])
        .join('\n');
      expect(plan, plan).toMatch(/Index (Only )?Scan (Backward )?using tasks_\w+ on tasks t/);
      expect(plan, plan).not.toMatch(/Seq Scan on tasks|Sort/);
    }
  });

  it('keeps its place while tasks are queued', async () => {
    const first = await listFleetTasks(node, { limit: 50, states: null, nodes: null });
    const after = first.next === 'end' ? undefined : first.next;
    const second = await listFleetTasks(node, {
      limit: 50,
      states: null,
      nodes: null,
      ...(after ? { after } : {}),
    });
    await admin.pool.query(
      `INSERT INTO agent_runner.tasks (id, repo_url, prd) SELECT 'NEW-' || i, 'https://git.example/r.git', '# P'
         FROM generate_series(1, 20) AS i`,
    );
    const again = await listFleetTasks(node, {
      limit: 50,
      states: null,
      nodes: null,
      ...(after ? { after } : {}),
    });
    expect(again.tasks.map((task) => task.taskId)).toEqual(second.tasks.map((task) => task.taskId));
    const top = await listFleetTasks(node, { limit: 20, states: null, nodes: null });
    expect(top.tasks.every((task) => task.taskId.startsWith('NEW-'))).toBe(true);
  });
});

describe("a pure node's API over the fleet", () => {
  const token = 'fleet-list-token';
  const api = () => {
    const redaction = new Redaction();
    return createApi(new PureNodeBoard(dir, createApp(process.env, {}, redaction), process.env), {
      token,
      redaction,
      fleetTasks: (query) => listFleetTasks(node, query),
      fleetTask: fleetTaskSource(node, feed),
    });
  };
  const get = async (app: ReturnType<typeof api>, route: string, headers: Record<string, string> = {}) =>
    app.request(route, { headers: { authorization: `Bearer ${token}`, ...headers } });

  it('pages the fleet list with the one cursor, filtered by node', async () => {
    const app = api();
    const ids: string[] = [];
    let cursor = '';
    for (let pages = 0; pages < 30; pages += 1) {
      const body = (await (await get(app, `/api/tasks?limit=200&node=node-a${cursor}`)).json()) as {
        tasks: unknown[];
        fleet: { taskId: string; node: { id: string } }[];
        next: string | null;
        more: boolean;
      };
      expect(body.tasks).toEqual([]);
      expect(new Set(body.fleet.map((task) => task.node.id))).toEqual(new Set(['node-a']));
      ids.push(...body.fleet.map((task) => task.taskId));
      if (body.next === null) break;
      cursor = `&cursor=${body.next}`;
    }
    expect(ids).toEqual(await expected(`node_id = 'node-a'`));
  });

  it("resumes another node's task's stream after a line's seq; refuses one past the last line", async () => {
    const taskId = 'F-00001';
    await admin.pool.query(
      `INSERT INTO agent_runner.events (task_id, seq, line)
       SELECT $1, n, json_build_object('type', 'log', 'n', n, 'text', 'é✓😀')::text FROM generate_series(1, 50) AS n`,
      [taskId],
    );
    const app = api();
    const events = async (lastEventId: string) => {
      const response = await get(app, `/api/tasks/${taskId}/events?follow=0`, {
        'last-event-id': lastEventId,
      });
      const seen: EventSourceMessage[] = [];
      createParser({ onEvent: (event) => seen.push(event) }).feed(await response.text());
      return { status: response.status, journal: seen.filter((event) => event.event === 'journal') };
    };
    const resumed = await events(formatEventPosition(taskId, 'line', 20));
    expect(resumed.status).toBe(200);
    expect(resumed.journal.map((event) => (JSON.parse(event.data) as { n: number }).n)).toEqual(
      Array.from({ length: 30 }, (_, index) => 21 + index),
    );
    expect(resumed.journal[0]?.id).toBe(formatEventPosition(taskId, 'line', 21));
    expect((await events(formatEventPosition(taskId, 'line', 51))).status).toBe(400);
    expect((await events(formatEventPosition(taskId, 'offset', 100))).status).toBe(400);
    expect((await events(formatEventPosition('F-00002', 'line', 3))).status).toBe(400);
  });
});
