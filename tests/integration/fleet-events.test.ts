/**
 * Another node's task, live from the real PostgreSQL: lines a node copies (copyJournalToDatabase, the same
 * NOTIFY as in serve) reach a follower on the other side through the one LISTEN connection well before the
 * slow poll would have found them; the stream ends with the task's row; and a LISTEN connection killed by the
 * server (pg_terminate_backend) is replaced while the follower keeps receiving lines.
 */
import { mkdtemp, appendFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ControlDatabase } from '../../src/control/control-database.js';
import { copyJournalToDatabase } from '../../src/control/event-sink.js';
import { FleetEventFeed, fleetEventLines, fleetTaskDetail } from '../../src/control/fleet-events.js';
import { migratedTestDatabase, type MigratedTestDatabase } from '../support/control-database.js';

let fleet: MigratedTestDatabase;
let admin: ControlDatabase;
let writer: ControlDatabase;
let reader: ControlDatabase;
let dir: string;

beforeAll(async () => {
  fleet = await migratedTestDatabase();
  admin = fleet.admin;
  writer = await fleet.node();
  reader = await fleet.node();
  dir = await mkdtemp(path.join(os.tmpdir(), 'fleet-events-'));
}, 600_000);

afterAll(async () => {
  await fleet?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const event = (n: number) => `${JSON.stringify({ type: 'log', n })}\n`;

it('a follower on another node gets each line by NOTIFY, across a killed LISTEN connection, until the task ends', async () => {
  const taskId = 'FLEETVIEW-1';
  await writer.pool.query(
    `INSERT INTO agent_runner.tasks (id, repo_url, prd, state) VALUES ($1, 'https://git.example/r.git', '# P', 'RUNNING')`,
    [taskId],
  );
  const journal = path.join(dir, `${taskId}.jsonl`);
  await appendFile(journal, event(1));
  let ended = false;
  const stopCopy = new AbortController();
  const copy = copyJournalToDatabase(writer, taskId, journal, {
    ended: () => ended,
    signal: stopCopy.signal,
    redactJsonText: (text) => text,
  });

  const feed = new FleetEventFeed(reader);
  await feed.start();
  expect(feed.listening()).toBe(true);
  const received: { id: number; n: number; at: number }[] = [];
  const follow = (async () => {
    for await (const line of fleetEventLines(reader, feed, taskId, {
      afterLine: 0,
      follow: true,
      signal: new AbortController().signal,
    }))
      received.push({ id: line.id, n: (JSON.parse(line.text) as { n: number }).n, at: Date.now() });
  })();

  const arrival = async (n: number) => {
    const deadline = Date.now() + 10_000;
    while (!received.some((line) => line.n === n) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10));
    return received.find((line) => line.n === n)?.at ?? Infinity;
  };

  await arrival(1);
  // Live by NOTIFY: each line arrives well within the 2 s slow poll (the journal copy polls every 25 ms).
  const lags: number[] = [];
  for (const n of [2, 3, 4]) {
    const written = Date.now();
    await appendFile(journal, event(n));
    lags.push((await arrival(n)) - written);
  }
  expect(Math.max(...lags)).toBeLessThan(1_000);

  // The server drops the LISTEN connection: the feed notices, reconnects, and no line is lost meanwhile.
  const killed = await admin.pool.query<{ n: number }>(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND query ILIKE 'LISTEN%'`,
  );
  expect(killed.rows[0]?.n).toBe(1);
  await appendFile(journal, event(5));
  expect(await arrival(5)).toBeLessThan(Infinity);
  const back = Date.now() + 10_000;
  while (!feed.listening() && Date.now() < back) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(feed.listening()).toBe(true);
  const written = Date.now();
  await appendFile(journal, event(6));
  expect((await arrival(6)) - written).toBeLessThan(1_000);

  // The task ends: its row says so, the follower reads the last line and returns.
  await appendFile(journal, event(7));
  ended = true;
  await copy;
  await writer.pool.query(
    `UPDATE agent_runner.tasks SET state = 'COMPLETE', exit_code = 0, ended_at = now() WHERE id = $1`,
    [taskId],
  );
  await writer.pool.query(`SELECT pg_notify('agent_runner_events', $1)`, [taskId]);
  await follow;
  expect(received.map((line) => line.id)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  expect(received.map((line) => line.n)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  expect(await fleetTaskDetail(reader, taskId)).toMatchObject({
    state: 'COMPLETE',
    exitCode: 0,
    fleet: true,
  });
  expect(await fleetTaskDetail(reader, 'NO-SUCH-TASK')).toBeNull();
  await feed.close();
  stopCopy.abort();
}, 60_000);
