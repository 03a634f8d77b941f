/**
 * `npm run bench:lists`: the server's lists and event streams at fleet size, over real HTTP.
 * 1. A single `serve`'s board: 10,000 tasks in the state directory. `GET /api/tasks`: the first page, a page
 *    filtered by state, a page 9,000 tasks deep (its cursor), each 100 times (goal: p95 ≤ 100 ms); the index's
 *    first build (the one request that waits for every journal) is reported apart.
 * 2. A fleet: 10,000 tasks in PostgreSQL (scripts/postgres.sh), through a pure node's API: the same pages, and
 *    one filtered by node.
 * 3. The board page in headless Chromium (the page's script from web/src, bundled): from navigation to its
 *    first 50 rows, 10 loads of each board.
 * 4. A task's event stream with 50,000 events: the first event's arrival (goal: ≤ 200 ms), a resume after the
 *    49,990th event (its first event, and the whole rest), from the local journal and from the database.
 * The machine's load (os.loadavg) is printed before and after; rows go to bench/results/lists.json and a
 * Markdown table to stdout. Progress on stderr.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createParser } from 'eventsource-parser';
import { createApp } from '../src/app.js';
import { controlUrl } from '../src/control/control-url.js';
import { openControlDatabase } from '../src/control/control-database.js';
import { FleetEventFeed, fleetTaskSource } from '../src/control/fleet-events.js';
import { listFleetTasks } from '../src/control/fleet-tasks.js';
import { migrateControl } from '../src/control/migrate-control.js';
import { Redaction } from '../src/notes/redact.js';
import { formatEventPosition } from '../src/serve/event-position.js';
import { createApi } from '../src/serve/http-api.js';
import { PureNodeBoard } from '../src/serve/pure-node-board.js';
import { TaskBoard } from '../src/serve/task-board.js';
import { createTestDatabase } from '../tests/support/control-database.js';
import { writeLongJournal, writeManyTasks } from '../tests/support/many-tasks.js';
import { launchChromium, pageScript, servePage } from '../tests/support/page-server.js';
import { runMain } from './run-main.js';
import { median, percentile } from './stats.js';

const ROOT = path.join(import.meta.dirname, '..');
const TASKS = 10_000;
const EVENTS = 50_000;
const ROUNDS = 100;
const TOKEN = 'bench-lists-token';
const progress = (message: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
const load = () => os.loadavg().map((value) => Math.round(value * 100) / 100);

interface Row {
  section: string;
  what: string;
  count: number;
  p50Ms: number;
  p95Ms: number;
  goalMs: number | null;
}
const rows: Row[] = [];
const round = (ms: number) => Math.round(ms * 10) / 10;

function record(section: string, what: string, samples: number[], goalMs: number | null): void {
  const row = {
    section,
    what,
    count: samples.length,
    p50Ms: round(median(samples)),
    p95Ms: round(percentile(samples, 95)),
    goalMs,
  };
  rows.push(row);
  progress(`${section} / ${what}: p50 ${row.p50Ms} ms, p95 ${row.p95Ms} ms`);
}

async function getJson<T>(url: string): Promise<[T, number]> {
  const started = performance.now();
  const response = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  const body = (await response.json()) as T;
  const ms = performance.now() - started;
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${JSON.stringify(body)}`);
  return [body, ms];
}

type Page = { tasks: unknown[]; fleet?: unknown[] | null; next: string | null };

/** The cursor of the page that starts `depth` tasks down (walked 500 at a time). */
async function deepCursor(url: string, depth: number): Promise<string> {
  let cursor = '';
  for (let walked = 0; walked < depth; walked += 500) {
    const [page] = await getJson<Page>(`${url}/api/tasks?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    if (page.next === null) throw new Error(`the list ended before ${depth}`);
    cursor = page.next;
  }
  return cursor;
}

async function pages(section: string, url: string, extra: [string, string][] = []): Promise<void> {
  const deep = await deepCursor(url, 9_000);
  const cases: [string, string][] = [
    ['first page (50)', '/api/tasks'],
    ['filtered by state (FAILED)', '/api/tasks?state=FAILED'],
    ['9,000 deep (cursor)', `/api/tasks?cursor=${deep}`],
    ...extra,
  ];
  for (const [what, route] of cases) {
    const samples: number[] = [];
    for (let index = 0; index < ROUNDS; index += 1) {
      const [page, ms] = await getJson<Page>(`${url}${route}`);
      if (page.tasks.length + (page.fleet?.length ?? 0) === 0) throw new Error(`${what}: an empty page`);
      samples.push(ms);
    }
    record(section, `GET ${what}`, samples, 100);
  }
}

async function boardLoads(section: string, url: string): Promise<void> {
  const browser = await launchChromium();
  try {
    const samples: number[] = [];
    for (let index = 0; index < 10; index += 1) {
      const page = await browser.newPage();
      const started = performance.now();
      await page.goto(`${url}/?token=${TOKEN}#/`);
      await page.locator('#board tbody tr').nth(49).waitFor();
      samples.push(performance.now() - started);
      await page.close();
    }
    record(section, 'board page, navigation to 50 rows (Chromium)', samples, null);
  } finally {
    await browser.close();
  }
}

/** The time to the first `journal` event, and to the stream's end (follow=0), after `lastEventId`. */
async function streamTimes(
  url: string,
  taskId: string,
  lastEventId?: string,
): Promise<[number, number, number]> {
  const started = performance.now();
  const response = await fetch(`${url}/api/tasks/${taskId}/events?follow=0`, {
    headers: { authorization: `Bearer ${TOKEN}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
  });
  if (!response.ok || response.body === null) throw new Error(`stream: HTTP ${response.status}`);
  let first = Number.NaN;
  let events = 0;
  const parser = createParser({
    onEvent: (event) => {
      if (event.event !== 'journal') return;
      events += 1;
      if (Number.isNaN(first)) first = performance.now() - started;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of response.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
  return [first, performance.now() - started, events];
}

async function streams(section: string, url: string, taskId: string, resumeAfter: string): Promise<void> {
  const starts: number[] = [];
  const wholes: number[] = [];
  for (let index = 0; index < 10; index += 1) {
    const [first, whole, events] = await streamTimes(url, taskId);
    if (events !== EVENTS) throw new Error(`the stream sent ${events} events, not ${EVENTS}`);
    starts.push(first);
    wholes.push(whole);
  }
  record(section, `stream of ${EVENTS} events: first event`, starts, 200);
  record(section, `stream of ${EVENTS} events: all of it`, wholes, null);
  const resumed: number[] = [];
  for (let index = 0; index < 50; index += 1) {
    const [first, , events] = await streamTimes(url, taskId, resumeAfter);
    if (events !== 10) throw new Error(`the resume sent ${events} events, not 10`);
    resumed.push(first);
  }
  record(section, 'resume after event 49,990: first event', resumed, 200);
}

async function main(): Promise<void> {
  const before = load();
  progress(`load before: ${before.join(' ')}`);
  const script = await pageScript();
  const redaction = new Redaction();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runner-bench-lists-'));
  const db = await createTestDatabase();
  const closers: (() => Promise<unknown>)[] = [];
  try {
    progress(`${TASKS} tasks in a state directory, a journal of ${EVENTS} events`);
    writeManyTasks(dir, TASKS);
    const positions = writeLongJournal(dir, 'LONG-LOCAL', EVENTS, (n) =>
      n % 3 === 0 ? `étape ${n} ✓` : `step ${n}`,
    );
    const local = await servePage(
      createApi(new TaskBoard(dir, createApp(process.env, {}, redaction), process.env), {
        token: TOKEN,
        redaction,
      }),
      script,
    );
    closers.push(local.close);
    const [, buildMs] = await getJson<Page>(`${local.url}/api/tasks`);
    record('serve (local board)', `index build: first request over ${TASKS + 1} tasks`, [buildMs], null);
    await pages('serve (local board)', local.url);
    await boardLoads('serve (local board)', local.url);
    await streams(
      'serve (local board)',
      local.url,
      'LONG-LOCAL',
      formatEventPosition('LONG-LOCAL', 'offset', positions[EVENTS - 11] as number),
    );

    progress(`${TASKS} tasks and ${EVENTS} events in PostgreSQL`);
    const admin = await openControlDatabase(controlUrl(db.url, redaction));
    closers.push(() => admin.close());
    await migrateControl(admin, { nodePassword: db.nodePassword });
    for (const node of ['node-a', 'node-b', 'node-c'])
      await admin.pool.query(
        `INSERT INTO agent_runner.nodes (id, host, pid, capacity) VALUES ($1, 'h.example', 1, 1)`,
        [node],
      );
    await admin.pool.query(
      `INSERT INTO agent_runner.tasks (id, repo_url, prd, state, node_id, created_at)
       SELECT 'F-' || lpad(i::text, 5, '0'), 'https://git.example/r.git', '# P',
              (ARRAY['COMPLETE', 'FAILED', 'NEEDS_REVIEW', 'RUNNING'])[1 + i % 4],
              (ARRAY['node-a', 'node-b', 'node-c'])[1 + i % 3],
              timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second'
         FROM generate_series(0, $1 - 1) AS i`,
      [TASKS],
    );
    await admin.pool.query(
      `INSERT INTO agent_runner.events (task_id, seq, line)
       SELECT 'F-00000', n, json_build_object('type', 'transition', 'from', 'RUNNING', 'to', 'RUNNING',
              'reason', 'step ' || n, 'at', '2026-01-02T00:00:00.000Z')::text
         FROM generate_series(1, $1) AS n`,
      [EVENTS],
    );
    await admin.pool.query('ANALYZE agent_runner.tasks; ANALYZE agent_runner.events');
    const node = await openControlDatabase(controlUrl(db.nodeUrl, redaction));
    closers.push(() => node.close());
    const feed = new FleetEventFeed(node);
    await feed.start();
    closers.push(() => feed.close());
    const pureDir = path.join(dir, 'pure-node');
    mkdirSync(pureDir);
    const fleet = await servePage(
      createApi(new PureNodeBoard(pureDir, createApp(process.env, {}, redaction), process.env), {
        token: TOKEN,
        redaction,
        fleetTasks: (query) => listFleetTasks(node, query),
        fleetTask: fleetTaskSource(node, feed),
      }),
      script,
    );
    closers.push(fleet.close);
    await pages('serve --control (fleet)', fleet.url, [
      ['filtered by node (node-b)', '/api/tasks?node=node-b'],
    ]);
    await boardLoads('serve --control (fleet)', fleet.url);
    await streams(
      'serve --control (fleet)',
      fleet.url,
      'F-00000',
      formatEventPosition('F-00000', 'line', EVENTS - 10),
    );
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await db.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  const after = load();
  progress(`load after: ${after.join(' ')}`);
  const result = {
    at: new Date().toISOString(),
    cpus: os.cpus().length,
    loadBefore: before,
    loadAfter: after,
    rows,
  };
  mkdirSync(path.join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(path.join(ROOT, 'bench', 'results', 'lists.json'), `${JSON.stringify(result, null, 2)}\n`);
  const lines = [
    `Load (1, 5, 15 min) before ${before.join(' / ')}, after ${after.join(' / ')}; ${os.cpus().length} cores.`,
    '',
    '| Server | What | n | p50 ms | p95 ms | Goal ms |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (row) =>
        `| ${row.section} | ${row.what} | ${row.count} | ${row.p50Ms} | ${row.p95Ms} | ${row.goalMs ?? '-'} |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

runMain(main);
