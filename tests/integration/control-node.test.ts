/**
 * Nodes against the real PostgreSQL: two nodes of capacity 2 take four queued tasks, two each, never more at
 * once, and every task's row ends with its state and its node. The tasks run through a runner that implements
 * the node's port and waits (the sandbox and the model are the e2e's: tests/e2e/control-fleet.test.ts).
 * A stale node loses its task to a live one. A node whose database goes away (a server of the test's own,
 * stopped) takes nothing until its heartbeat reaches it again, then takes the next task.
 * A task's end is NOTIFYed, so a follower on another node sees it at once.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { controlUrl } from '../../src/control/control-url.js';
import { openControlDatabase, type ControlDatabase } from '../../src/control/control-database.js';
import { EVENTS_CHANNEL } from '../../src/control/event-sink.js';
import { FleetEventFeed, fleetEventLines } from '../../src/control/fleet-events.js';
import { FleetNode, type FleetTask, type FleetTaskRunner } from '../../src/control/fleet-node.js';
import { migrateControl } from '../../src/control/migrate-control.js';
import { enqueueTask, startQueueClient } from '../../src/control/task-queue.js';
import { Redaction } from '../../src/notes/redact.js';
import { createTestDatabase, privatePostgres, type TestDatabase } from '../support/control-database.js';

let db: TestDatabase;
const opened: ControlDatabase[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const admin = await openControlDatabase(controlUrl(db.url, new Redaction()));
  opened.push(admin);
  await migrateControl(admin, { nodePassword: db.nodePassword });
}, 600_000);

afterAll(async () => {
  for (const database of opened) await database.close();
  await db?.drop();
});

/** Records which node ran which task and how many ran at once on each; each task takes `ms`. */
class WaitingRunner implements FleetTaskRunner {
  readonly ran: FleetTask[] = [];
  now = 0;
  most = 0;
  constructor(private readonly ms: number) {}
  async run(task: FleetTask) {
    this.ran.push(task);
    this.now += 1;
    this.most = Math.max(this.most, this.now);
    await new Promise((resolve) => setTimeout(resolve, this.ms));
    this.now -= 1;
    return { state: 'COMPLETE', exitCode: 0 };
  }
  readonly abandoned: string[] = [];
  async abandon(taskId: string) {
    this.abandoned.push(taskId);
  }
}

async function nodeDatabase() {
  const database = await openControlDatabase(controlUrl(db.nodeUrl, new Redaction()));
  opened.push(database);
  return database;
}

it('two nodes of capacity 2 take four queued tasks, two each, and record their ends', async () => {
  const client = await nodeDatabase();
  const sender = await startQueueClient(client);
  for (const n of [1, 2, 3, 4])
    await enqueueTask(client, sender, {
      taskId: `FLEET-${n}`,
      repoUrl: `https://git.example/repo-${n}.git`,
      prd: `# Task ${n}\n`,
    });
  await sender.stop({ graceful: false, wait: true });

  const runners = [new WaitingRunner(1_500), new WaitingRunner(1_500)];
  const nodes = await Promise.all(
    runners.map(async (runner, index) => {
      const database = await nodeDatabase();
      const boss = await startQueueClient(database);
      return {
        boss,
        node: new FleetNode(database, boss, runner, { id: `node-${index}`, capacity: 2, pollMs: 200 }),
      };
    }),
  );
  for (const { node } of nodes) await node.start();

  const ended = async () =>
    (await client.pool.query(`SELECT 1 FROM agent_runner.tasks WHERE ended_at IS NOT NULL`)).rowCount;
  const deadline = Date.now() + 60_000;
  while ((await ended()) !== 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  for (const { node, boss } of nodes) {
    await node.stop();
    await boss.stop({ graceful: false, wait: true });
  }

  expect(runners.map((runner) => runner.ran.length)).toEqual([2, 2]);
  expect(runners.map((runner) => runner.most)).toEqual([2, 2]);
  expect(runners[0]?.ran[0]).toMatchObject({ repoUrl: expect.stringMatching(/^https:\/\/git\.example\//) });
  const rows = await client.pool.query<{ id: string; state: string; node_id: string; exit_code: number }>(
    `SELECT id, state, node_id, exit_code FROM agent_runner.tasks ORDER BY id`,
  );
  expect(rows.rows.map((row) => [row.id, row.state, row.exit_code])).toEqual(
    [1, 2, 3, 4].map((n) => [`FLEET-${n}`, 'COMPLETE', 0]),
  );
  const byNode = new Map<string, number>();
  for (const row of rows.rows) byNode.set(row.node_id, (byNode.get(row.node_id) ?? 0) + 1);
  expect(Object.fromEntries(byNode)).toEqual({ 'node-0': 2, 'node-1': 2 });
  const jobs = await client.pool.query(`SELECT state FROM pgboss.job WHERE name = 'tasks'`);
  expect(jobs.rows.map((row: { state: string }) => row.state)).toEqual(Array(4).fill('completed'));
}, 120_000);

it('a stale node loses its task to a live one (generation 2), learns it at its heartbeat and writes no end', async () => {
  const client = await nodeDatabase();
  const sender = await startQueueClient(client);
  await enqueueTask(client, sender, {
    taskId: 'LEASE-1',
    repoUrl: 'https://git.example/lease.git',
    prd: '# L\n',
    // A webhook's task from an issue: the node that takes it over delivers it as the first would have.
    deliver: { pr: true, closes: 12 },
  });
  await sender.stop({ graceful: false, wait: true });
  // The first node beats every 4 s with a 2 s lease: between beats it is stale (as a paused or cut-off node).
  const slow = new WaitingRunner(7_000);
  const fast = new WaitingRunner(300);
  /** A node of capacity 1 with a 2 s lease, beating every `heartbeatMs`. */
  const leasedNode = async (id: string, runner: WaitingRunner, heartbeatMs: number) => {
    const database = await nodeDatabase();
    const boss = await startQueueClient(database);
    const node = new FleetNode(database, boss, runner, {
      id,
      capacity: 1,
      pollMs: 200,
      heartbeatMs,
      leaseSeconds: 2,
    });
    return { node, boss };
  };
  const { node: stale, boss: firstBoss } = await leasedNode('stale-node', slow, 4_000);
  await stale.start();
  const until = async (check: () => Promise<boolean> | boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!(await check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  };
  await until(() => slow.ran.length === 1, 10_000);
  const { node: live, boss: secondBoss } = await leasedNode('live-node', fast, 300);
  await live.start();
  const state = async () =>
    (await client.pool.query<{ state: string }>(`SELECT state FROM agent_runner.tasks WHERE id = 'LEASE-1'`))
      .rows[0]?.state;
  await until(async () => (await state()) === 'COMPLETE', 20_000);
  await until(() => slow.abandoned.length === 1, 10_000);
  await live.stop();
  await stale.stop();
  for (const boss of [firstBoss, secondBoss]) await boss.stop({ graceful: false, wait: true });

  expect(slow.ran.map((task) => task.generation)).toEqual([1]);
  expect(fast.ran.map((task) => [task.taskId, task.generation])).toEqual([['LEASE-1', 2]]);
  expect(slow.abandoned).toEqual(['LEASE-1']);
  expect([...slow.ran, ...fast.ran].map((task) => task.deliver)).toEqual([
    { pr: true, closes: 12 },
    { pr: true, closes: 12 },
  ]);
  const row = await client.pool.query(
    `SELECT state, node_id, lease_generation, exit_code FROM agent_runner.tasks WHERE id = 'LEASE-1'`,
  );
  // The stale node's end (after its 7 s) was refused: the row is the live node's.
  expect(row.rows).toEqual([{ state: 'COMPLETE', node_id: 'live-node', lease_generation: 2, exit_code: 0 }]);
  const jobs = await client.pool.query(
    `SELECT state, retry_count FROM pgboss.job WHERE data->>'taskId' = 'LEASE-1'`,
  );
  expect(jobs.rows).toEqual([{ state: 'completed', retry_count: 1 }]);
}, 60_000);

it('a node that cannot reach its database takes no task until it can again, then takes the next', async () => {
  // A server of this test's own: stopping it leaves the shared one to the files running beside this one.
  const cluster = await privatePostgres();
  try {
    const own = await createTestDatabase(cluster.adminUrl);
    const admin = await openControlDatabase(controlUrl(own.url, new Redaction()));
    await migrateControl(admin, { nodePassword: own.nodePassword });
    await admin.close();
    const database = await openControlDatabase(controlUrl(own.nodeUrl, new Redaction()));
    const boss = await startQueueClient(database);
    const runner = new WaitingRunner(100);
    const log: string[] = [];
    const node = new FleetNode(database, boss, runner, {
      id: 'cut-off-node',
      capacity: 1,
      pollMs: 200,
      heartbeatMs: 300,
      log: (line) => log.push(line),
    });
    await node.start();
    const until = async (check: () => boolean, ms: number) => {
      const deadline = Date.now() + ms;
      while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    };
    await cluster.stop();
    await until(() => !node.isHealthy(), 10_000);
    expect(node.isHealthy(), log.join('\n')).toBe(false);
    expect(log.join('\n')).toContain('control database unreachable');
    await cluster.start();
    await until(() => node.isHealthy(), 20_000);
    expect(log.join('\n')).toContain('control database reachable again: taking tasks');
    await enqueueTask(database, boss, {
      taskId: 'BACK-1',
      repoUrl: 'https://git.example/b.git',
      prd: '# B\n',
    });
    await until(() => runner.ran.length === 1, 20_000);
    expect(runner.ran.map((task) => task.taskId)).toEqual(['BACK-1']);
    await node.stop();
    await boss.stop({ graceful: false, wait: true });
    await database.close();
  } finally {
    await cluster.remove();
  }
}, 120_000);

it("a task's end written by its node is NOTIFYed: a follower on another node sees it at once, not at its poll", async () => {
  const client = await nodeDatabase();
  const sender = await startQueueClient(client);
  await enqueueTask(client, sender, {
    taskId: 'FLEET-END',
    repoUrl: 'https://git.example/r.git',
    prd: '# P\n',
  });
  await sender.stop({ graceful: false, wait: true });
  // The probe: a LISTEN of our own on the channel every follower waits on. The runner writes no journal line,
  // so the only NOTIFY for this task is the one that comes with its end.
  const listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  const notified: number[] = [];
  listener.on('notification', (message) => {
    if (message.channel === EVENTS_CHANNEL && message.payload === 'FLEET-END') notified.push(Date.now());
  });
  await listener.query(`LISTEN ${EVENTS_CHANNEL}`);
  const feed = new FleetEventFeed(client);
  await feed.start();

  const database = await nodeDatabase();
  const boss = await startQueueClient(database);
  const node = new FleetNode(database, boss, new WaitingRunner(1_500), {
    id: 'node-end',
    capacity: 1,
    pollMs: 200,
  });
  await node.start();
  const running = async () =>
    (await client.pool.query(`SELECT 1 FROM agent_runner.tasks WHERE id = 'FLEET-END' AND state = 'RUNNING'`))
      .rowCount;
  const deadline = Date.now() + 30_000;
  while ((await running()) !== 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  // A follower of the running task (as `/events` on another node): it waits on the feed until the end.
  for await (const line of fleetEventLines(client, feed, 'FLEET-END', {
    afterLine: 0,
    follow: true,
    signal: AbortSignal.timeout(30_000),
  }))
    void line;
  const followerDone = Date.now();
  await node.stop();
  await boss.stop({ graceful: false, wait: true });
  await feed.close();
  await listener.end();

  const row = await client.pool.query<{ state: string; ended_at: Date }>(
    `SELECT state, ended_at FROM agent_runner.tasks WHERE id = 'FLEET-END'`,
  );
  expect(row.rows[0]?.state).toBe('COMPLETE');
  expect(notified.length).toBeGreaterThanOrEqual(1);
  // The follower's poll is 2 s; by NOTIFY it ends well before.
  expect(followerDone - (row.rows[0]?.ended_at.getTime() ?? 0)).toBeLessThan(1_000);
}, 60_000);

it('an idle node is woken by the queue: a task queued on another node starts at once, not at its poll', async () => {
  const database = await nodeDatabase();
  const boss = await startQueueClient(database);
  const feed = new FleetEventFeed(database);
  await feed.start();
  const runner = new WaitingRunner(100);
  // A poll far beyond the test: only the queue's NOTIFY can start the task in time.
  const node = new FleetNode(database, boss, runner, { id: 'node-idle', capacity: 1, pollMs: 600_000 });
  const unsubscribe = feed.onQueued(() => node.wake());
  await node.start();
  // The node's first poll (at its start) has found the queue empty.
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(runner.ran).toEqual([]);

  const client = await nodeDatabase();
  const sender = await startQueueClient(client);
  const waits: number[] = [];
  for (const n of [1, 2, 3]) {
    const queued = Date.now();
    await enqueueTask(client, sender, {
      taskId: `IDLE-${n}`,
      repoUrl: 'https://git.example/r.git',
      prd: '# P\n',
    });
    const deadline = queued + 10_000;
    while (runner.ran.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    waits.push(Date.now() - queued);
    // Idle again before the next one.
    while (node.runningTasks().length > 0) await new Promise((r) => setTimeout(r, 20));
  }
  await sender.stop({ graceful: false, wait: true });
  unsubscribe();
  await node.stop();
  await boss.stop({ graceful: false, wait: true });
  await feed.close();
  expect(runner.ran.map((task) => task.taskId)).toEqual(['IDLE-1', 'IDLE-2', 'IDLE-3']);
  // Generous for a loaded machine; without the wake each would wait the whole 600 s poll.
  for (const wait of waits) expect(wait).toBeLessThan(5_000);
}, 120_000);
