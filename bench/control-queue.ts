/**
 * bench:control: the fleet's queue with 10 nodes, each a process of its own (bench/fleet-node-process.ts: the
 * node wired as `serve --control` wires it, with a runner that ends each task at once) on the real PostgreSQL
 * of scripts/postgres.sh. Two parts:
 *   - idle: the nodes wait with free slots; tasks are queued one at a time, each after the last has ended:
 *     enqueue → start p50/p95 (the node is woken by the queue's NOTIFY; its poll is only the safety net);
 *   - deep: BENCH_DEPTHS (default 100, 1,000, 10,000) tasks queued by 4 producers as fast as they can while
 *     the nodes take them: tasks per second, enqueue → start p50/p95, database transactions per task
 *     (pg_stat_database.xact_commit) and PostgreSQL's CPU per task (/proc);
 *   - drain: BENCH_DRAIN_TASKS (default 1,000) queued while the nodes are paused (SIGSTOP), then released: the
 *     rate at which the fleet empties a deep queue.
 * Each node reports its own CPU time and peak memory at the end.
 * Times are the database's clock (tasks.started_at − created_at). Prints one JSON object on stdout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { controlUrl } from '../src/control/control-url.js';
import { openControlDatabase, type ControlDatabase } from '../src/control/control-database.js';
import { migrateControl } from '../src/control/migrate-control.js';
import { enqueueTask, startQueueClient } from '../src/control/task-queue.js';
import { Redaction } from '../src/notes/redact.js';
import { createTestDatabase } from '../tests/support/control-database.js';
import { percentile, round } from './stats.js';

const NODES = 10;
const CAPACITY = 4;
const IDLE_TASKS = Number(process.env.BENCH_IDLE_TASKS ?? 100);
const DEPTHS = (process.env.BENCH_DEPTHS ?? '100,1000,10000').split(',').map(Number);
const PRODUCERS = 4;
const DRAIN_TASKS = Number(process.env.BENCH_DRAIN_TASKS ?? 1_000);
const TICK = 100; // USER_HZ on Linux

/** CPU seconds (user + system) of every process named postgres. */
function postgresCpuSeconds(): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!name.startsWith('postgres')) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // A process that ended meanwhile.
    }
  }
  return ticks / TICK;
}

interface NodeReport {
  id: string;
  taken: number;
  cpuSeconds: number;
  peakRssMiB: number;
}

/** Starts a node process; resolves when it takes tasks. */
function startNode(
  nodeUrl: string,
  id: string,
): Promise<{ child: ChildProcess; report: Promise<NodeReport> }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(import.meta.dirname, 'fleet-node-process.ts'),
      nodeUrl,
      id,
      String(CAPACITY),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout! });
  let ready: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  const report = new Promise<NodeReport>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line === 'ready') ready();
      else if (line.startsWith('{')) resolve(JSON.parse(line) as NodeReport);
    });
    child.on('exit', (code) => reject(new Error(`node ${id} exited ${code} without its report`)));
  });
  report.catch(() => undefined);
  return isReady.then(() => ({ child, report }));
}

const commitsOf = async (admin: ControlDatabase) =>
  Number(
    (
      await admin.pool.query<{ n: string }>(
        'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()',
      )
    ).rows[0]?.n,
  );

const waitsOf = async (admin: ControlDatabase, prefix: string) =>
  (
    await admin.pool.query<{ ms: number }>(
      `SELECT extract(epoch FROM started_at - created_at) * 1000 AS ms FROM agent_runner.tasks WHERE id LIKE $1`,
      [`${prefix}%`],
    )
  ).rows.map((row) => Number(row.ms));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function untilEnded(admin: ControlDatabase, prefix: string, count: number): Promise<void> {
  for (;;) {
    const { rows } = await admin.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM agent_runner.tasks WHERE id LIKE $1 AND ended_at IS NOT NULL`,
      [`${prefix}%`],
    );
    if (Number(rows[0]?.n) >= count) return;
    await sleep(20);
  }
}

const db = await createTestDatabase();
const admin = await openControlDatabase(controlUrl(db.url, new Redaction()));
await migrateControl(admin, { nodePassword: db.nodePassword });
const client = await openControlDatabase(controlUrl(db.nodeUrl, new Redaction()), { max: PRODUCERS + 2 });
const boss = await startQueueClient(client);
const load = [os.loadavg()];

const nodes = await Promise.all(
  Array.from({ length: NODES }, (_, n) => startNode(db.nodeUrl, `bench-node-${n}`)),
);
// Every node has polled once and waits (the first poll comes at its start).
await sleep(1_000);

// Idle: one task at a time, each queued once the one before has ended.
for (let n = 0; n < IDLE_TASKS; n += 1) {
  await enqueueTask(client, boss, {
    taskId: `IDLE-${n}`,
    repoUrl: 'https://git.example/r.git',
    prd: '# P\n',
  });
  await untilEnded(admin, `IDLE-${n}`, 1);
  await sleep(50);
}
const idleWaits = await waitsOf(admin, 'IDLE-');
const idle = {
  tasks: IDLE_TASKS,
  enqueueToStartMs: { p50: round(percentile(idleWaits, 50)), p95: round(percentile(idleWaits, 95)) },
};

const deep = [];
for (const depth of DEPTHS) {
  const prefix = `DEEP${depth}-`;
  // The statistics of the idle part (or the last depth) are flushed before the count starts.
  await sleep(1_500);
  const commitsBefore = await commitsOf(admin);
  const cpuBefore = postgresCpuSeconds();
  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: PRODUCERS }, async () => {
      for (let n = next++; n < depth; n = next++)
        await enqueueTask(client, boss, {
          taskId: `${prefix}${n}`,
          repoUrl: 'https://git.example/r.git',
          prd: '# P\n',
        });
    }),
  );
  const enqueued = Date.now();
  await untilEnded(admin, prefix, depth);
  const wall = (Date.now() - started) / 1_000;
  const cpu = postgresCpuSeconds() - cpuBefore;
  await sleep(1_500);
  const transactions = (await commitsOf(admin)) - commitsBefore;
  const waits = await waitsOf(admin, prefix);
  deep.push({
    tasks: depth,
    enqueueSeconds: round((enqueued - started) / 1_000),
    wallSeconds: round(wall),
    tasksPerSecond: round(depth / wall),
    enqueueToStartMs: { p50: round(percentile(waits, 50)), p95: round(percentile(waits, 95)) },
    transactionsPerTask: round(transactions / depth),
    postgresCpuMsPerTask: round((cpu * 1_000) / depth),
  });
  load.push(os.loadavg());
}

// Drain: DRAIN_TASKS queued while every node is paused (SIGSTOP), then the nodes go on at once: how fast the
// fleet empties a deep queue, apart from how fast one client can fill it.
const drainPrefix = 'DRAIN-';
await sleep(1_500);
for (const node of nodes) node.child.kill('SIGSTOP');
let nextDrain = 0;
await Promise.all(
  Array.from({ length: PRODUCERS }, async () => {
    for (let n = nextDrain++; n < DRAIN_TASKS; n = nextDrain++)
      await enqueueTask(client, boss, {
        taskId: `${drainPrefix}${n}`,
        repoUrl: 'https://git.example/r.git',
        prd: '# P\n',
      });
  }),
);
const drainCommitsBefore = await commitsOf(admin);
const drainCpuBefore = postgresCpuSeconds();
const drainStarted = Date.now();
for (const node of nodes) node.child.kill('SIGCONT');
await untilEnded(admin, drainPrefix, DRAIN_TASKS);
const drainWall = (Date.now() - drainStarted) / 1_000;
const drainCpu = postgresCpuSeconds() - drainCpuBefore;
await sleep(1_500);
const drain = {
  tasks: DRAIN_TASKS,
  wallSeconds: round(drainWall),
  tasksPerSecond: round(DRAIN_TASKS / drainWall),
  transactionsPerTask: round(((await commitsOf(admin)) - drainCommitsBefore) / DRAIN_TASKS),
  postgresCpuMsPerTask: round((drainCpu * 1_000) / DRAIN_TASKS),
};
load.push(os.loadavg());

for (const node of nodes) node.child.kill('SIGTERM');
const reports = await Promise.all(nodes.map((node) => node.report));
console.log(
  JSON.stringify(
    {
      nodes: NODES,
      capacityPerNode: CAPACITY,
      idle,
      deep,
      drain,
      perNode: reports.map((report) => ({
        ...report,
        cpuSeconds: round(report.cpuSeconds),
        peakRssMiB: round(report.peakRssMiB),
      })),
      load: load.map((sample) => sample.map((value) => round(value))),
      cores: os.cpus().length,
    },
    null,
    2,
  ),
);
await boss.stop({ graceful: false, wait: true });
await client.close();
await admin.close();
await db.drop();
process.exit(0);
