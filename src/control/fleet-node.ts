/**
 * One node of the fleet (`serve --control`): it registers itself in agent_runner.nodes, heartbeats, and takes
 * queued tasks from pg-boss up to its capacity, each run through a {@link FleetTaskRunner} (in `serve`: the
 * same TaskBoard, hence the same composition as `run`, on the task's `--repo` cache). A node whose last
 * heartbeat failed (the database is away) takes no new task; the tasks it runs go on.
 *
 * TODO(issue 36, step 3): the page showing `fleet` (another node's task and its stream are served already:
 *   fleet-events.ts); `answer`/`stop` of another node's task (a row in a new migration that the running node
 *   LISTENs for) and `--control URL` on `wait`/`logs`/`answer`/`stop`; `serve --control` without a repository;
 *   in bench/control-queue.ts, the overhead of `--control` on one real task against a plain `serve`.
 * TODO(issue 36, step 4): push the task branch and the WIP ref after each worker run (src/deliver/push.ts,
 *   from FleetTaskBoards); fail the jobs of nodes stale past NODE_STALE_SECONDS (task-queue-options.ts) so
 *   pg-boss's retry gives them to another node, and there run `board.resume` on a fresh cache from the
 *   remote's refs and the events in the database instead of `board.start`; a node back from the dead removes
 *   its orphaned containers and does not run those tasks again (its job is no longer active for it).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type PgBoss from 'pg-boss';
import type { ControlDatabase } from './control-database.js';
import { HEARTBEAT_SECONDS, TASK_QUEUE, type TaskJobData } from './task-queue-options.js';

/** A task as a node receives it from the queue. */
export interface FleetTask {
  taskId: string;
  repoUrl: string;
  base: string | null;
  prd: string;
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
}

export interface FleetNodeOptions {
  /** Unique in the fleet; default: host, pid and a random suffix. */
  id?: string;
  /** Tasks at once (`parallel.max`, or what the machine holds). */
  capacity: number;
  /** This node's API, shown by `control status` (no token). */
  url?: string;
  /** How often the node asks the queue for work when it has free slots. */
  pollMs?: number;
  heartbeatMs?: number;
  /** A line for the server's log (a task taken, the database lost or back). */
  log?: (line: string) => void;
}

export class FleetNode {
  readonly id: string;
  private readonly running = new Map<string, Promise<void>>();
  private healthy = false;
  private stopped = false;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling = false;

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
    this.heartbeatTimer = setInterval(
      () => void this.heartbeat(),
      this.options.heartbeatMs ?? HEARTBEAT_SECONDS * 1_000,
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

  private async heartbeat(): Promise<void> {
    try {
      await this.database.pool.query(
        'UPDATE agent_runner.nodes SET heartbeat_at = now(), running = $2 WHERE id = $1',
        [this.id, this.running.size],
      );
      if (!this.healthy) this.options.log?.('control database reachable again: taking tasks');
      this.healthy = true;
    } catch (error) {
      if (this.healthy)
        this.options.log?.(
          `control database unreachable (${(error as Error).message}): no new task until it is back`,
        );
      this.healthy = false;
    }
  }

  /** Takes as many jobs as there are free slots; one poll at a time. */
  private async poll(): Promise<void> {
    if (this.polling || this.stopped || !this.healthy) return;
    const free = this.options.capacity - this.running.size;
    if (free <= 0) return;
    this.polling = true;
    try {
      const jobs = await this.boss.fetch<TaskJobData>(TASK_QUEUE, { batchSize: free });
      for (const job of jobs) this.take(job);
    } catch (error) {
      this.options.log?.(`could not ask the queue for tasks: ${(error as Error).message}`);
    } finally {
      this.polling = false;
    }
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
    const { rows } = await this.database.pool.query<{ repo_url: string; base: string | null; prd: string }>(
      `UPDATE agent_runner.tasks SET state = 'RUNNING', node_id = $2, started_at = coalesce(started_at, now())
         WHERE id = $1 RETURNING repo_url, base, prd`,
      [taskId, this.id],
    );
    const row = rows[0];
    if (row === undefined) {
      await this.boss.fail(TASK_QUEUE, job.id, { reason: 'no such task row' });
      return;
    }
    this.options.log?.(`task ${taskId}: taken (${row.repo_url})`);
    let end: FleetTaskEnd;
    try {
      end = await this.runner.run({ taskId, repoUrl: row.repo_url, base: row.base, prd: row.prd });
    } catch (error) {
      end = { state: 'FAILED', exitCode: null };
      this.options.log?.(`task ${taskId}: could not run: ${(error as Error).message}`);
    }
    // The database may be away now: the end is kept and written when it is back (else the job would expire
    // and the task run again elsewhere). A node stopped meanwhile leaves it to the lease.
    for (;;) {
      try {
        await this.database.pool.query(
          `UPDATE agent_runner.tasks SET state = $2, exit_code = $3, ended_at = now() WHERE id = $1`,
          [taskId, end.state ?? 'FAILED', end.exitCode],
        );
        await this.boss.complete(TASK_QUEUE, job.id, { state: end.state, exitCode: end.exitCode });
        break;
      } catch (error) {
        if (this.stopped) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
    this.options.log?.(`task ${taskId}: ${end.state ?? 'ended'}${end.reason ? `: ${end.reason}` : ''}`);
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
