/**
 * Answer and stop of another node's task, on the real PostgreSQL: node A's API (createApi with the fleet's
 * source, as `serve --control` wires it) writes the request (202), node B's taker (its own connection and
 * LISTEN feed) applies it to the task it runs within a second by NOTIFY; a taker without a LISTEN connection
 * still gets it by its slow poll, and one whose LISTEN connection the server killed gets it after the
 * reconnect. A queued or ended task answers 409, an unknown one 404; each request is applied once; the answer's
 * text is applied as given and never logged.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import type { ControlDatabase } from '../../src/control/control-database.js';
import { FleetEventFeed, fleetTaskSource } from '../../src/control/fleet-events.js';
import {
  TaskRequestTaker,
  type TaskRequest,
  type TaskRequestTarget,
} from '../../src/control/task-requests.js';
import { Redaction } from '../../src/notes/redact.js';
import { createApi } from '../../src/serve/http-api.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { createDemoRepo } from '../support/demo-task.js';
import { migratedTestDatabase, type MigratedTestDatabase } from '../support/control-database.js';

let fleet: MigratedTestDatabase;
let admin: ControlDatabase;
let nodeA: ControlDatabase;
let nodeB: ControlDatabase;
const cleanups: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  fleet = await migratedTestDatabase();
  admin = fleet.admin;
  nodeA = await fleet.node();
  nodeB = await fleet.node();
  await admin.pool.query(
    `INSERT INTO agent_runner.nodes (id, host, pid, capacity) VALUES ('node-b', 'b.example', 1, 2)`,
  );
}, 600_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fleet?.close();
});

/** Node B's side: the tasks it runs and every request applied to them, with when. */
class RecordingTarget implements TaskRequestTarget {
  readonly applied: ({ taskId: string; at: number } & TaskRequest)[] = [];
  constructor(private readonly live: string[]) {}
  liveTasks(): string[] {
    return this.live;
  }
  apply(taskId: string, request: TaskRequest): void {
    if (request.kind === 'answer' && request.text === 'no question waiting')
      throw new Error(`Task ${taskId} has no question waiting for an answer.`);
    this.applied.push({ taskId, at: Date.now(), ...request });
  }
  async arrival(count: number, within = 10_000): Promise<number> {
    const deadline = Date.now() + within;
    while (this.applied.length < count && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10));
    return this.applied[count - 1]?.at ?? Infinity;
  }
}

async function addTask(id: string, state: string, node: string | null = null): Promise<void> {
  await admin.pool.query(
    `INSERT INTO agent_runner.tasks (id, repo_url, prd, state, node_id) VALUES ($1, 'https://git.example/r.git', '# P', $2, $3)`,
    [id, state, node],
  );
}

/** Node A's API over its own repository (which runs none of these tasks), with the fleet behind it. */
async function nodeApi() {
  const { dir, remove } = createDemoRepo('');
  cleanups.push(remove);
  const redaction = new Redaction();
  const feed = new FleetEventFeed(nodeA);
  await feed.start();
  cleanups.push(() => feed.close());
  const token = randomBytes(12).toString('hex');
  const api = createApi(new TaskBoard(dir, createApp(process.env, {}, redaction), process.env), {
    token,
    redaction,
    fleetTask: fleetTaskSource(nodeA, feed),
  });
  return async (taskId: string, action: 'stop' | 'answer', text?: string) => {
    const response = await api.request(`/api/tasks/${taskId}/${action}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(action === 'answer' ? { body: JSON.stringify({ text }) } : {}),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
}

it('a stop and an answer written on node A reach the task on node B by NOTIFY, each once; 409 and 404 otherwise', async () => {
  await addTask('REQ-RUN', 'RUNNING', 'node-b');
  await addTask('REQ-QUEUED', 'QUEUED');
  await addTask('REQ-DONE', 'COMPLETE', 'node-b');
  const post = await nodeApi();

  const feed = new FleetEventFeed(nodeB);
  await feed.start();
  cleanups.push(() => feed.close());
  const target = new RecordingTarget(['REQ-RUN']);
  const log: string[] = [];
  // The poll far away (60 s): what arrives within a second came by NOTIFY.
  const taker = new TaskRequestTaker(nodeB, feed, 'node-b', target, (line) => log.push(line), 60_000);
  taker.start();
  cleanups.push(() => taker.stop());

  const answer = 'keep the digits: slug-2024 (the user said so)';
  let sent = Date.now();
  expect(await post('REQ-RUN', 'answer', answer)).toEqual({
    status: 202,
    body: { taskId: 'REQ-RUN', answered: true, node: 'node-b' },
  });
  expect((await target.arrival(1)) - sent).toBeLessThan(1_000);
  sent = Date.now();
  expect(await post('REQ-RUN', 'stop')).toEqual({
    status: 202,
    body: { taskId: 'REQ-RUN', stop: 'requested', node: 'node-b' },
  });
  expect((await target.arrival(2)) - sent).toBeLessThan(1_000);
  // Who asked goes with each request (the caller's token name and role, its address; never the token): the
  // running node writes it into the task's journal. Called in-process here, so there is no socket address.
  const by = { actor: { name: 'server', role: 'admin' }, from: 'unknown' };
  expect(target.applied.map(({ at: _at, ...request }) => request)).toEqual([
    { taskId: 'REQ-RUN', kind: 'answer', text: answer, by },
    { taskId: 'REQ-RUN', kind: 'stop', by },
  ]);

  // Applied once: a second wake-up finds nothing pending.
  await taker.wake();
  expect(target.applied).toHaveLength(2);
  const rows = await admin.pool.query<{ kind: string; taken_by: string }>(
    `SELECT kind, taken_by FROM agent_runner.task_requests WHERE task_id = 'REQ-RUN' ORDER BY id`,
  );
  expect(rows.rows).toEqual([
    { kind: 'answer', taken_by: 'node-b' },
    { kind: 'stop', taken_by: 'node-b' },
  ]);

  // A request the task cannot take (no question waiting) is said in the log, without the text.
  await post('REQ-RUN', 'answer', 'no question waiting');
  const deadline = Date.now() + 5_000;
  while (!log.some((line) => line.includes('no question waiting for')) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  expect(log.join('\n')).toContain(
    'REQ-RUN: answer from another node not applied: Task REQ-RUN has no question',
  );
  expect(log.join('\n')).not.toContain(answer);
  expect(log.join('\n')).toContain('REQ-RUN: answered from another node');

  for (const action of ['stop', 'answer'] as const) {
    const queued = await post('REQ-QUEUED', action, 'x');
    expect(queued.status).toBe(409);
    expect(queued.body).toMatchObject({ error: { code: 'not_running' } });
    expect(String((queued.body.error as { message: string }).message)).toContain('queued');
    const done = await post('REQ-DONE', action, 'x');
    expect(done.status).toBe(409);
    expect(String((done.body.error as { message: string }).message)).toContain('has ended (COMPLETE)');
    expect((await post('REQ-NONE', action, 'x')).status).toBe(404);
  }
  const written = await admin.pool.query(
    `SELECT 1 FROM agent_runner.task_requests WHERE task_id IN ('REQ-QUEUED', 'REQ-DONE')`,
  );
  expect(written.rowCount).toBe(0);
}, 60_000);

it('without NOTIFY (no LISTEN connection, or one the server killed) a request still arrives, later', async () => {
  await addTask('REQ-POLL', 'RUNNING', 'node-b');
  const post = await nodeApi();

  // A feed never started: no LISTEN connection, the poll alone (every 2 s).
  const silent = new FleetEventFeed(nodeB);
  const polled = new RecordingTarget(['REQ-POLL']);
  const poller = new TaskRequestTaker(nodeB, silent, 'node-b', polled);
  poller.start();
  cleanups.push(() => poller.stop());
  expect(silent.listening()).toBe(false);
  expect((await post('REQ-POLL', 'stop')).status).toBe(202);
  expect(await polled.arrival(1, 5_000)).toBeLessThan(Infinity);
  poller.stop();

  // A feed whose LISTEN connection the server kills: the request written meanwhile arrives after the reconnect.
  await addTask('REQ-KILLED', 'RUNNING', 'node-b');
  const feed = new FleetEventFeed(nodeB);
  await feed.start();
  cleanups.push(() => feed.close());
  const target = new RecordingTarget(['REQ-KILLED']);
  const taker = new TaskRequestTaker(nodeB, feed, 'node-b', target, undefined, 60_000);
  taker.start();
  cleanups.push(() => taker.stop());
  const killed = await admin.pool.query<{ n: number }>(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND query ILIKE 'LISTEN%'`,
  );
  // Node A's feeds and node B's: the probe sees the connections it kills.
  expect(killed.rows[0]?.n).toBeGreaterThanOrEqual(2);
  expect((await post('REQ-KILLED', 'answer', 'yes')).status).toBe(202);
  expect(await target.arrival(1, 10_000)).toBeLessThan(Infinity);
  const back = Date.now() + 10_000;
  while (!feed.listening() && Date.now() < back) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(feed.listening()).toBe(true);
  // And by NOTIFY again once back.
  const sent = Date.now();
  expect((await post('REQ-KILLED', 'stop')).status).toBe(202);
  expect((await target.arrival(2)) - sent).toBeLessThan(1_000);
}, 60_000);
