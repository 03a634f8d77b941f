/**
 * `serve --control`: the server as a node of the fleet. Its queue, its tasks on remote repositories, its
 * journals copied to the control database, answers and stops from other nodes, the fleet's named tokens and
 * audit log; the containers a crashed earlier process left are swept before it takes a task.
 */
import path from 'node:path';
import type { App } from '../app.js';
import type { ControlDatabase } from '../control/control-database.js';
import type { FleetEventFeed } from '../control/fleet-events.js';
import type { Enqueue } from '../serve/http-api.js';
import type { CommandContext } from './program.js';
import type { ServeOptions } from './serve-command.js';

/** The control plane's modules, loaded only by a node (a plain `serve` never pays for pg and pg-boss). */
async function loadFleetModules() {
  const [
    controlUrlModule,
    database,
    queue,
    fleetNode,
    boards,
    sink,
    fleetTasks,
    fleetEvents,
    requests,
    tokens,
    deliveries,
  ] = await Promise.all([
    import('../control/control-url.js'),
    import('../control/control-database.js'),
    import('../control/task-queue.js'),
    import('../control/fleet-node.js'),
    import('../serve/fleet-task-runner.js'),
    import('../control/event-sink.js'),
    import('../control/fleet-tasks.js'),
    import('../control/fleet-events.js'),
    import('../control/task-requests.js'),
    import('../control/control-tokens.js'),
    import('../control/webhook-deliveries.js'),
  ]);
  return {
    controlUrl: controlUrlModule.controlUrl,
    openControlDatabase: database.openControlDatabase,
    startQueueClient: queue.startQueueClient,
    enqueueTask: queue.enqueueTask,
    enqueueFollowup: queue.enqueueFollowup,
    enqueueReviewFollowup: queue.enqueueReviewFollowup,
    recordAdoptedPrd: queue.recordAdoptedPrd,
    FleetNode: fleetNode.FleetNode,
    boards,
    sink,
    listFleetTasks: fleetTasks.listFleetTasks,
    fleetEvents,
    TaskRequestTaker: requests.TaskRequestTaker,
    ControlTokenStore: tokens.ControlTokenStore,
    ControlAuditLog: tokens.ControlAuditLog,
    ControlDeliveryStore: deliveries.ControlDeliveryStore,
  };
}

/** How often a node asks the queue for work besides the NOTIFY that wakes it (a lost NOTIFY, the feed down). */
const SAFETY_POLL_MS = 5_000;

/** With a control URL: this server as a node of the fleet (its queue, its tasks on remote repositories). */
export async function joinFleet(
  options: ServeOptions,
  control: { url?: string | undefined; leaseSeconds?: number | undefined },
  capacity: number,
  app: App,
  context: CommandContext,
) {
  const given = options.control ?? control.url;
  const { leaseSeconds } = control;
  if (given === undefined) return null;
  const fleet = await loadFleetModules();
  const { controlUrl, openControlDatabase, startQueueClient, FleetNode, boards, sink, fleetEvents } = fleet;
  const url = controlUrl(given, context.redaction, options.control ? '--control' : 'control.url');
  const database = await openControlDatabase(url, { applicationName: 'agent-runner-node' });
  // A node supervises too: pg-boss's maintenance (expiring jobs past their lease) runs on whichever node holds its lock.
  const boss = await startQueueClient(database, { supervise: true });
  const stopCopies = new AbortController();
  const runner = new boards.FleetTaskBoards(app, context.env, context.redaction, {
    ...(options.modelScript ? { modelScript: path.resolve(context.cwd, options.modelScript) } : {}),
    // Every journal line to the database as well (buffered in the journal itself while the database is away).
    copyEvents: (task, journalFile, ended) =>
      sink
        .copyJournalToDatabase(database, task.taskId, journalFile, {
          ended,
          signal: stopCopies.signal,
          redactJsonText: context.redaction.redactJsonText,
          log: (line) => context.output.err(`agent-runner serve: ${line}`),
          ...(node ? { lease: { nodeId: node.id, generation: task.generation } } : {}),
        })
        .catch(() => 0),
    journalOf: (taskId) => sink.journalFromDatabase(database, taskId),
    recordPrd: (task, prd) => fleet.recordAdoptedPrd(database, task.taskId, prd),
    log: (line) => context.output.err(`agent-runner serve: ${line}`),
  });
  let node: InstanceType<typeof FleetNode> | null = null;
  let requests: InstanceType<typeof fleet.TaskRequestTaker> | null = null;
  context.output.err(`agent-runner serve: a node of the fleet at ${url.shown} (capacity ${capacity})`);
  // One LISTEN connection for every follower of another node's task.
  const feed = new fleetEvents.FleetEventFeed(database);
  await feed.start();
  return {
    api: fleetApi(fleet, database, boss, feed, () => node?.id),
    /** The webhook deliveries the fleet has taken: one task per delivery, whichever node it reaches. */
    deliveries: new fleet.ControlDeliveryStore(database),
    start: async (apiUrl: string) => {
      await sweepFleetOrphans(context);
      const fleetNode = new FleetNode(database, boss, runner, {
        capacity,
        url: apiUrl,
        // Woken by the queue's NOTIFY on the feed's connection: the poll is the safety net.
        pollMs: SAFETY_POLL_MS,
        ...(leaseSeconds !== undefined ? { leaseSeconds } : {}),
        log: (line) => context.output.err(`agent-runner serve: ${line}`),
      });
      node = fleetNode;
      feed.onQueued(() => fleetNode.wake());
      await fleetNode.start();
      // Answers and stops written on any node for the tasks this one runs.
      requests = new fleet.TaskRequestTaker(database, feed, node.id, runner, (line) =>
        context.output.err(`agent-runner serve: ${line}`),
      );
      requests.start();
    },
    stop: async () => {
      requests?.stop();
      await Promise.all(runner.all().map((taskBoard) => taskBoard.stopAll()));
      // The copies end once their tasks have (a database still away at exit: the rest is in the journals).
      setTimeout(() => stopCopies.abort(), 10_000).unref();
      await node?.stop();
      await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
      await feed.close();
      await database.close().catch(() => undefined);
    },
  };
}

type FleetModules = Awaited<ReturnType<typeof loadFleetModules>>;

/** What the node's API is given: the fleet's tokens and audit log, its tasks, its queue. */
function fleetApi(
  fleet: FleetModules,
  database: ControlDatabase,
  boss: Parameters<FleetModules['enqueueTask']>[1],
  feed: FleetEventFeed,
  nodeId: () => string | undefined,
) {
  return {
    tokens: new fleet.ControlTokenStore(database),
    audit: new fleet.ControlAuditLog(database),
    nodeId,
    fleetTasks: (query: Parameters<FleetModules['listFleetTasks']>[1]) =>
      fleet.listFleetTasks(database, query),
    fleetTask: fleet.fleetEvents.fleetTaskSource(database, feed),
    enqueue: async (request: Parameters<Enqueue>[0]) => {
      const { newTaskId } = await import('../app.js');
      const taskId = request.taskId ?? newTaskId(request.prd);
      await fleet.enqueueTask(database, boss, { ...request, taskId, repoUrl: request.repo });
      return taskId;
    },
    enqueueFollowup: (taskId: string, followup: { message: string; pr?: boolean }) =>
      fleet.enqueueFollowup(database, boss, taskId, followup),
    /**
     * A review's webhook: a follow-up from review of the fleet's ended task, read by the node that takes it; a
     * task the fleet does not have is adopted from the event's repository.
     */
    enqueueReviewFollowup: (followup: { taskId: string; requestUrl: string; repo: string }) =>
      fleet.enqueueReviewFollowup(
        database,
        boss,
        followup.taskId,
        { requestUrl: followup.requestUrl },
        { repoUrl: followup.repo },
      ),
  };
}

/**
 * A node back after a crash (kill -9, power loss): the containers its earlier process left in the repository
 * cache (labelled with a runner that is no longer alive on this host) are removed before it takes a task. Their
 * tasks are not run again here: their leases expired and other nodes resumed them.
 */
async function sweepFleetOrphans(context: CommandContext): Promise<void> {
  const [
    { createDockerClient },
    { DockerSandboxRuntime },
    orphans,
    { cacheRoot },
    { VERSION },
    { taskLayout },
    { capVolumesUnder, releaseCapVolume },
  ] = await Promise.all([
    import('../sandbox/docker-client.js'),
    import('../sandbox/docker-runtime.js'),
    import('../lifecycle/orphan-sandboxes.js'),
    import('../remote/repository-cache.js'),
    import('../version.js'),
    import('../workspace/layout.js'),
    import('../sandbox/cap-volume.js'),
  ]);
  try {
    const runtime = new DockerSandboxRuntime(createDockerClient(context.env), {
      version: VERSION,
      env: context.env,
    });
    const under = `${path.resolve(cacheRoot(context.env))}${path.sep}`;
    const dead = (await orphans.findOrphanSandboxes(runtime)).filter((sandbox) =>
      path.resolve(sandbox.repo || '/').startsWith(under),
    );
    const swept = await orphans.removeSandboxes(runtime, dead);
    // The disk caps their runner mounted (loop devices, as `gc` releases them): the files go back in place.
    for (const sandbox of swept.removed) {
      const layout = taskLayout(sandbox.repo, sandbox.taskId);
      for (const dir of [layout.sandboxDir, layout.runDir])
        for (const mountPath of await capVolumesUnder(dir)) await releaseCapVolume(mountPath);
    }
    for (const sandbox of swept.removed)
      context.output.err(
        `agent-runner serve: removed ${sandbox.name}, left by a node that died (task ${sandbox.taskId})`,
      );
    for (const { sandbox, message } of swept.failed)
      context.output.err(`agent-runner serve: could not remove ${sandbox.name}: ${message}`);
  } catch (error) {
    context.output.err(
      `agent-runner serve: could not look for orphaned containers: ${(error as Error).message}`,
    );
  }
}
