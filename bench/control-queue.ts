/**
 * bench:control: 1,000 queued tasks over 10 simulated nodes (one process, each a real FleetNode on the real
 * PostgreSQL of scripts/postgres.sh) whose runner ends at once (instant sandbox and model): enqueue → start
 * p50/p95 (tasks.started_at − created_at, the database's clock), tasks per second, transactions per task
 * (pg_stat_database.xact_commit delta) and the postgres processes' CPU time (/proc).
 */
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { controlUrl } from '../src/control/control-url.js';
import { openControlDatabase } from '../src/control/control-database.js';
import { FleetNode } from '../src/control/fleet-node.js';
import { migrateControl } from '../src/control/migrate-control.js';
import { enqueueTask, startQueueClient } from '../src/control/task-queue.js';
import { Redaction } from '../src/notes/redact.js';
import { createTestDatabase } from '../tests/support/control-database.js';
import { percentile, round } from './stats.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 1_000);
const NODES = 10;
const CAPACITY = 4;
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

const db = await createTestDatabase();
const admin = await openControlDatabase(controlUrl(db.url, new Redaction()));
await migrateControl(admin, { nodePassword: db.nodePassword });
const client = await openControlDatabase(controlUrl(db.nodeUrl, new Redaction()), { max: 20 });
const boss = await startQueueClient(client);
const commits = async () =>
  Number(
    (
      await admin.pool.query<{ n: string }>(
        'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()',
      )
    ).rows[0]?.n,
  );

const nodes: FleetNode[] = [];
const instant = { run: async () => ({ state: 'COMPLETE', exitCode: 0 }), abandon: async () => {} };
for (let n = 0; n < NODES; n += 1) {
  const database = await openControlDatabase(controlUrl(db.nodeUrl, new Redaction()), { max: 2 });
  const queue = await startQueueClient(database);
  nodes.push(new FleetNode(database, queue, instant, { id: `bench-node-${n}`, capacity: CAPACITY }));
}
const commitsBefore = await commits();
const cpuBefore = postgresCpuSeconds();
const started = Date.now();
for (const node of nodes) await node.start();
for (let n = 0; n < TASKS; n += 1)
  await enqueueTask(client, boss, {
    taskId: `BENCH-${n}`,
    repoUrl: 'https://git.example/r.git',
    prd: '# P\n',
  });
const enqueued = Date.now();
for (;;) {
  const { rows } = await admin.pool.query<{ n: string }>(
    'SELECT count(*) AS n FROM agent_runner.tasks WHERE ended_at IS NULL',
  );
  if (Number(rows[0]?.n) === 0) break;
  await new Promise((resolve) => setTimeout(resolve, 200));
}
const wall = (Date.now() - started) / 1_000;
const cpu = postgresCpuSeconds() - cpuBefore;
const transactions = (await commits()) - commitsBefore;
const { rows } = await admin.pool.query<{ ms: number }>(
  'SELECT extract(epoch FROM started_at - created_at) * 1000 AS ms FROM agent_runner.tasks',
);
const waits = rows.map((row) => Number(row.ms));
console.log(
  JSON.stringify(
    {
      tasks: TASKS,
      nodes: NODES,
      capacityPerNode: CAPACITY,
      enqueueSeconds: round((enqueued - started) / 1_000),
      wallSeconds: round(wall),
      tasksPerSecond: round(TASKS / wall),
      enqueueToStartMs: { p50: round(percentile(waits, 50)), p95: round(percentile(waits, 95)) },
      transactionsPerTask: round(transactions / TASKS),
      postgresCpuSeconds: round(cpu),
      load: os.loadavg().map((value) => round(value)),
      cores: os.cpus().length,
    },
    null,
    2,
  ),
);
for (const node of nodes) await node.stop();
await boss.stop({ graceful: false, wait: true });
await client.close();
await admin.close();
await db.drop();
process.exit(0);
