/**
 * One node of the fleet (`serve --control`): it registers itself in agent_runner.nodes, heartbeats, and takes
 * queued tasks from pg-boss up to its capacity, each run through a {@link FleetTaskRunner} (in `serve`: the
 * same TaskBoard, hence the same composition as `run`, on the task's `--repo` cache). A node whose last
 * heartbeat failed (the database is away) takes no new task; the tasks it runs go on. Answer and stop of a task
 * another node runs: task-requests.ts; the page and a pure node: web/src/app.ts, pure-node-board.ts.
 *
 * The lease (issue 36, step 4): every heartbeat also sweeps the fleet's tasks whose node is stale (no heartbeat
 * for `leaseSeconds`): one UPDATE hands each such task back (QUEUED, no node) and, in the same transaction,
 * fails its job, so pg-boss's retry gives it to another node, which resumes it (the remote's refs, the journal
 * in the database). Two nodes sweeping at once: the row lock lets only one of them see each task. Taking a
 * task bumps its `lease_generation` (the fencing token); a node that finds, at its heartbeat, a task it runs
 * held by another node or another generation has lost it: it stops it and writes nothing of its end.
 * A task's waiting question (the row's `question`, kept by event-sink.ts) is cleared when a node takes the task,
 * when it goes back to the queue and at its end: a question is asked again by the attempt that needs it.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type PgBoss from 'pg-boss';
import type { ControlDatabase } from './control-database.js';
import { EVENTS_CHANNEL } from './event-sink.js';
import { inTransaction } from './task-queue.js';
import {
  HEARTBEAT_SECONDS,
  NODE_STALE_SECONDS,
  TASK_QUEUE,
  jobRequests,
  type FleetDelivery,
  type FleetFollowup,
  type FleetReviewFollowup,
  type TaskJobData,
} from './task-queue-options.js';

/** A task as a node receives it from the queue. */
export interface FleetTask {
  taskId: string;
  repoUrl: string;
  base: string | null;
  prd: string;
  /** The lease's generation this node holds (1 the first time the task is taken). */
  generation: number;
  /** Another node ran it before (its journal is in the database, its refs on the remote): resume it. */
  resume: boolean;
  /** Whether this node still holds the task's lease (asked before each push: a stale node pushes nothing). */
  holds?: () => Promise<boolean>;
  /** A follow-up of the ended task (its journal in the database, its branch on the remote). */
  followup?: FleetFollowup;
  /** A follow-up from the review of the ended task's request (a review's webhook). */
  review?: FleetReviewFollowup;
  /** Delivered once it ends (a webhook's task from an issue), by the node that ends it. */
  deliver?: FleetDelivery;
}

/** How a task ended, as its journal says. */
export interface FleetTaskEnd {
  state: string | null;
  exitCode: number | null;
  /** Why it ended without a state (it failed before its journal said so). */
  reason?: string | null;
}

/** The port a node runs its tasks through. */
export interface FleetTaskRunner {
  run(task: FleetTask): Promise<FleetTaskEnd>;
  /** Stops a task this node no longer holds (its lease was taken over); its end is not reported. */
  abandon(taskId: string): Promise<void>;
}

export interface FleetNodeOptions {
  /** Unique in the fleet; default: host, pid and a random suffix. */
  id?: string;
  /** Tasks at once (`parallel.max`, or what the machine holds). */
  capacity: number;
  /** This node's API, shown by `control status` (no token). */
  url?: string;
  /**
   * How often the node asks the queue for work when it has free slots (default 1 s). A node woken by the queue's
   * NOTIFY ({@link FleetNode.wake}) polls only as a safety net, slower.
   */
  pollMs?: number;
  heartbeatMs?: number;
  /** A node without a heartbeat for this long is stale and its tasks go to others (`control.leaseSeconds`). */
  leaseSeconds?: number;
  /** A line for the server's log (a task taken, the database lost or back). */
  log?: (line: string) => void;
}

export class FleetNode {
  readonly id: string;
  private readonly running = new Map<string, Promise<void>>();
  /** The lease generation of each task this node holds; a task taken over by another node leaves it. */
  private readonly held = new Map<string, number>();
  /** Tasks this node lost to another (fenced): their end is not written. */
  private readonly lost = new Set<string>();
  private healthy = false;
  /** Since when the node's heartbeats reach the database (it sweeps others' tasks only a lease later). */
  private healthySince = Date.now();
  private stopped = false;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling = false;
  /** A wake came while a poll was under way: its fetch may have run before the job was committed. */
  private pollAgain = false;

  constructor(
    private readonly database: ControlDatabase,
    private readonly boss: PgBoss,
    private readonly runner: FleetTaskRunner,
    private readonly options: FleetNodeOptions,
  ) {
    // The random part: two nodes in one process (tests), or a pid reused after a reboot, are two nodes.
    this.id = options.id ?? `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  }

  /** Registers the node and starts its heartbeat and its polling. */
  async start(): Promise<void> {
    await this.database.pool.query(
      `INSERT INTO agent_runner.nodes (id, host, pid, url, capacity, running)
         VALUES ($1, $2, $3, $4, $5, 0)
       ON CONFLICT (id) DO UPDATE SET host = $2, pid = $3, url = $4, capacity = $5, running = 0,
         started_at = now(), heartbeat_at = now()`,
      [this.id, os.hostname(), process.pid, this.options.url ?? null, this.options.capacity],
    );
    this.healthy = true;
    this.healthySince = Date.now();
    this.heartbeatTimer = setInterval(
      () => void this.heartbeat(),
      this.options.heartbeatMs ?? Math.min(HEARTBEAT_SECONDS, this.leaseSeconds() / 3) * 1_000,
    );
    this.pollTimer = setInterval(() => void this.poll(), this.options.pollMs ?? 1_000);
    void this.poll();
  }

  /** Tasks this node runs now. */
  runningTasks(): string[] {
    return [...this.running.keys()];
  }

  /** Whether the node's last heartbeat reached the database (it takes new tasks only then). */
  isHealthy(): boolean {
    return this.healthy;
  }

  private leaseSeconds(): number {
    return this.options.leaseSeconds ?? NODE_STALE_SECONDS;
  }

  private async heartbeat(): Promise<void> {
    try {
      await this.database.pool.query(
        'UPDATE agent_runner.nodes SET heartbeat_at = now(), running = $2 WHERE id = $1',
        [this.id, this.running.size],
      );
      if (!this.healthy) {
        this.options.log?.('control database reachable again: taking tasks');
        this.healthySince = Date.now();
      }
      this.healthy = true;
    } catch (error) {
      if (this.healthy)
        this.options.log?.(
          `control database unreachable (${(error as Error).message}): no new task until it is back`,
        );
      this.healthy = false;
      return;
    }
    try {
      await this.fence();
      // Sweep only after a whole lease of beating: after an outage of the database every node's heartbeat is
      // old, and the first node back must not take the tasks of the others before they could beat again.
      if (Date.now() - this.healthySince >= this.leaseSeconds() * 1_000) await this.sweep();
    } catch (error) {
      this.options.log?.(`could not check the fleet's leases: ${(error as Error).message}`);
    }
  }

  /**
   * The fencing check: a task this node runs whose row names another node or a newer generation was taken over
   * (this node was stale: paused, cut off); it is stopped here and its end never written.
   */
  private async fence(): Promise<void> {
    if (this.held.size === 0) return;
    const { rows } = await this.database.pool.query<{
      id: string;
      node_id: string | null;
      lease_generation: number;
    }>('SELECT id, node_id, lease_generation FROM agent_runner.tasks WHERE id = ANY($1)', [
      [...this.held.keys()],
    ]);
    for (const row of rows) {
      if (row.node_id === this.id && row.lease_generation === this.held.get(row.id)) continue;
      if (this.lost.has(row.id)) continue;
      this.lost.add(row.id);
      this.options.log?.(
        `task ${row.id}: taken over by ${row.node_id ?? 'the queue'} (lease generation ${row.lease_generation}): stopping it here`,
      );
      void this.runner.abandon(row.id).catch(() => undefined);
    }
  }

  /**
   * Hands the tasks of stale nodes back to the queue. One UPDATE: when two nodes sweep at once, the second
   * waits on the row locks, then finds the rows no longer RUNNING and returns nothing. The jobs are failed in
   * the same transaction, so a task is never QUEUED with its job still active (or the reverse).
   */
  private async sweep(): Promise<void> {
    const client = await this.database.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string; job_id: string | null; node_id: string }>(
        `UPDATE agent_runner.tasks t SET state = 'QUEUED', node_id = NULL, question = NULL
           FROM agent_runner.nodes n
          WHERE n.id = t.node_id AND t.state = 'RUNNING' AND n.id <> $1
            AND n.heartbeat_at < now() - make_interval(secs => $2)
          RETURNING t.id, t.job_id, n.id AS node_id`,
        [this.id, this.leaseSeconds()],
      );
      const jobs = rows.flatMap((row) => (row.job_id === null ? [] : [row.job_id]));
      for (const job of jobs)
        await this.boss.fail(TASK_QUEUE, job, { reason: 'its node is stale' }, { db: inTransaction(client) });
      await client.query('COMMIT');
      for (const row of rows)
        this.options.log?.(`task ${row.id}: node ${row.node_id} is stale, the task goes to another node`);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** A task was queued (the queue's NOTIFY): a node with a free slot asks for it now. */
  wake(): void {
    void this.poll();
  }

  /** Takes as many jobs as there are free slots; one poll at a time (a wake during one asks again after it). */
  private async poll(): Promise<void> {
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    if (this.stopped || !this.healthy) return;
    const free = this.options.capacity - this.running.size;
    if (free <= 0) return;
    this.polling = true;
    this.pollAgain = false;
    try {
      const jobs = await this.boss.fetch<TaskJobData>(TASK_QUEUE, { batchSize: free });
      for (const job of jobs) this.take(job);
    } catch (error) {
      this.options.log?.(`could not ask the queue for tasks: ${(error as Error).message}`);
    } finally {
      this.polling = false;
    }
    if (this.pollAgain) void this.poll();
  }

  private take(job: PgBoss.Job<TaskJobData>): void {
    const { taskId } = job.data;
    const done = this.runJob(job)
      .catch((error: unknown) => {
        this.options.log?.(`task ${taskId}: ${(error as Error).message}`);
      })
      .finally(() => {
        this.running.delete(taskId);
        void this.poll();
      });
    this.running.set(taskId, done);
  }

  private async runJob(job: PgBoss.Job<TaskJobData>): Promise<void> {
    const { taskId } = job.data;
    // Taking the task bumps its fencing token; a task already ended (a job retried after its end) is not run.
    const { rows } = await this.database.pool.query<{
      repo_url: string;
      base: string | null;
      prd: string;
      lease_generation: number;
      ran_before: boolean;
    }>(
      `UPDATE agent_runner.tasks SET state = 'RUNNING', node_id = $2, lease_generation = lease_generation + 1,
              started_at = coalesce(started_at, now()), question = NULL
         WHERE id = $1 AND state IN ('QUEUED', 'RUNNING')
       RETURNING repo_url, base, prd, lease_generation,
                 EXISTS (SELECT 1 FROM agent_runner.events e WHERE e.task_id = $1) AS ran_before`,
      [taskId, this.id],
    );
    const row = rows[0];
    if (row === undefined) {
      await this.boss.fail(TASK_QUEUE, job.id, { reason: 'no such task row, or the task has ended' });
      return;
    }
    const generation = row.lease_generation;
    this.held.set(taskId, generation);
    this.options.log?.(
      `task ${taskId}: taken (${row.repo_url}, lease generation ${generation}${row.ran_before ? ', resumed' : ''})`,
    );
    let end: FleetTaskEnd;
    try {
      end = await this.runner.run({
        taskId,
        repoUrl: row.repo_url,
        base: row.base,
        prd: row.prd,
        generation,
        resume: row.ran_before,
        holds: () => this.holds(taskId, generation),
        ...jobRequests(job.data),
      });
    } catch (error) {
      end = { state: 'FAILED', exitCode: null };
      this.options.log?.(`task ${taskId}: could not run: ${(error as Error).message}`);
    }
    // The database may be away now: the end is kept and written when it is back (else the job would expire
    // and the task run again elsewhere). A node stopped meanwhile leaves it to the lease.
    try {
      for (;;) {
        if (this.lost.has(taskId)) {
          this.options.log?.(`task ${taskId}: stopped here, it runs on another node`);
          return;
        }
        try {
          // Fenced: only the holder of this generation writes the end and completes the job.
          const written = await this.database.pool.query(
            `UPDATE agent_runner.tasks SET state = $2, exit_code = $3, ended_at = now(), question = NULL
              WHERE id = $1 AND node_id = $4 AND lease_generation = $5`,
            [taskId, end.state ?? 'FAILED', end.exitCode, this.id, generation],
          );
          if (written.rowCount === 0) {
            this.lost.add(taskId);
            continue;
          }
          // The task's followers on every node (`/events`, `wait`, the page) see the end now rather than at
          // their next slow poll (2 s); lost, they still see it then.
          await this.database.pool
            .query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, taskId])
            .catch(() => undefined);
          await this.boss.complete(TASK_QUEUE, job.id, { state: end.state, exitCode: end.exitCode });
          break;
        } catch (error) {
          if (this.stopped) throw error;
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      }
    } finally {
      this.held.delete(taskId);
    }
    this.options.log?.(`task ${taskId}: ${end.state ?? 'ended'}${end.reason ? `: ${end.reason}` : ''}`);
  }

  private async holds(taskId: string, generation: number): Promise<boolean> {
    if (this.lost.has(taskId)) return false;
    const { rowCount } = await this.database.pool.query(
      'SELECT 1 FROM agent_runner.tasks WHERE id = $1 AND node_id = $2 AND lease_generation = $3',
      [taskId, this.id, generation],
    );
    return rowCount === 1;
  }

  /** The lease generation this node holds for a task it runs (its event rows carry it), or null. */
  generationOf(taskId: string): number | null {
    return this.held.get(taskId) ?? null;
  }

  /**
   * Stops taking tasks and waits for the running ones (the caller stops them first). The node's row stays
   * (its tasks still name it), with capacity 0: a node that left.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeatTimer);
    clearInterval(this.pollTimer);
    await Promise.all(this.running.values());
    await this.database.pool
      .query('UPDATE agent_runner.nodes SET capacity = 0, running = 0 WHERE id = $1', [this.id])
      .catch(() => undefined);
  }
}
