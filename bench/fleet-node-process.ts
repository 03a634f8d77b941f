/**
 * One node of `bench:control`, in a process of its own: the node's parts wired as `serve --control` wires them
 * (a pg-boss client that supervises, the node's one LISTEN connection, a FleetNode woken by the queue's NOTIFY
 * with the 5 s safety poll, the request taker), with a runner that ends each task at once instead of the task
 * board (no sandbox, no model). Started by bench/control-queue.ts with the node database's URL; it prints
 * `ready` when it takes tasks and, at SIGTERM, one JSON line with its own CPU time, peak memory and task count.
 */
import { controlUrl } from '../src/control/control-url.js';
import { openControlDatabase } from '../src/control/control-database.js';
import { FleetEventFeed } from '../src/control/fleet-events.js';
import { FleetNode, type FleetTaskRunner } from '../src/control/fleet-node.js';
import { startQueueClient } from '../src/control/task-queue.js';
import { TaskRequestTaker } from '../src/control/task-requests.js';
import { Redaction } from '../src/notes/redact.js';

const [url, id, capacity] = process.argv.slice(2);
if (!url || !id || !capacity) throw new Error('usage: fleet-node-process.ts NODE_URL ID CAPACITY');

let taken = 0;
let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
const runner: FleetTaskRunner = {
  run: async () => {
    taken += 1;
    return { state: 'COMPLETE', exitCode: 0 };
  },
  abandon: async () => undefined,
};
// serve's node database: its default pool (the node's API, the copies of the journal and the queue share it).
const database = await openControlDatabase(controlUrl(url, new Redaction()), {
  applicationName: 'agent-runner-node',
});
const boss = await startQueueClient(database, { supervise: true });
const feed = new FleetEventFeed(database);
await feed.start();
const node = new FleetNode(database, boss, runner, { id, capacity: Number(capacity), pollMs: 5_000 });
feed.onQueued(() => node.wake());
await node.start();
// Instant tasks are never live long enough to take a request; the taker is wired as serve wires it.
const requests = new TaskRequestTaker(database, feed, node.id, {
  liveTasks: () => [],
  apply: () => undefined,
});
requests.start();
process.stdout.write('ready\n');

process.once('SIGTERM', () => {
  void (async () => {
    requests.stop();
    await node.stop();
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
    await feed.close();
    await database.close();
    clearInterval(sampler);
    const cpu = process.cpuUsage();
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    process.stdout.write(
      `${JSON.stringify({ id, taken, cpuSeconds: (cpu.user + cpu.system) / 1e6, peakRssMiB: peakRss / 2 ** 20 })}\n`,
    );
    process.exit(0);
  })();
});
