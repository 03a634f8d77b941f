/**
 * Answer and stop of a task another node runs. Any node writes the request as a row of
 * agent_runner.task_requests and NOTIFYs {@link REQUESTS_CHANNEL} (payload: the task id); the node that runs the
 * task takes it (marks it taken, so it is applied once) and acts exactly as for a local request, through the
 * task's board. It hears of a request through the node's one LISTEN connection ({@link FleetEventFeed}) and,
 * as a safety net (the connection down, or the request written while the task was still preparing), a slow
 * poll while it runs tasks.
 *
 * An answer's text is the user's own input to the task: stored as given (it goes into the task as a local
 * answer does), never logged.
 */
import type { AuditEntry } from '../identity/audit-entry.js';
import type { ControlDatabase } from './control-database.js';
import type { FleetEventFeed } from './fleet-events.js';

/** The channel a request is announced on; the payload is the task id. */
export const REQUESTS_CHANNEL = 'agent_runner_requests';
/** How often a node running tasks looks for requests that no NOTIFY announced. */
const POLL_MS = 2_000;

/** Who asked, for the audit event the running node writes into the task's journal (the audit's own fields). */
export type RequestedBy = Pick<AuditEntry, 'actor' | 'from' | 'node'>;

/** What a client asks of a running task. */
export type TaskRequest = ({ kind: 'answer'; text: string } | { kind: 'stop' }) & { by?: RequestedBy };

/** Whether a request was written: the task runs on a node, or why not. */
export type TaskRequestResult =
  | { written: true; nodeId: string }
  | { written: false; reason: 'not_found' }
  | { written: false; reason: 'not_running'; state: string };

/**
 * Writes a request for a fleet task and announces it. Only a RUNNING task takes requests: an ended one has
 * nothing to stop or answer, and a QUEUED one runs nowhere yet (stop it once a node has taken it).
 */
export async function requestTask(
  database: ControlDatabase,
  taskId: string,
  request: TaskRequest,
): Promise<TaskRequestResult> {
  const client = await database.pool.connect();
  try {
    await client.query('BEGIN');
    // The row lock: a task cannot end between the check and the insert unseen (its end waits for the commit).
    const { rows } = await client.query<{ state: string; node_id: string | null }>(
      'SELECT state, node_id FROM agent_runner.tasks WHERE id = $1 FOR SHARE',
      [taskId],
    );
    const row = rows[0];
    if (row === undefined) {
      await client.query('ROLLBACK');
      return { written: false, reason: 'not_found' };
    }
    if (row.state !== 'RUNNING' || row.node_id === null) {
      await client.query('ROLLBACK');
      return { written: false, reason: 'not_running', state: row.state };
    }
    await client.query(
      'INSERT INTO agent_runner.task_requests (task_id, kind, text, requested_by) VALUES ($1, $2, $3, $4)',
      [taskId, request.kind, request.kind === 'answer' ? request.text : null, request.by ?? null],
    );
    // Delivered at the commit, with the row.
    await client.query('SELECT pg_notify($1, $2)', [REQUESTS_CHANNEL, taskId]);
    await client.query('COMMIT');
    return { written: true, nodeId: row.node_id };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** Takes the pending requests of `taskIds` (each once, oldest first), marked taken by `nodeId`. */
export async function takeTaskRequests(
  database: ControlDatabase,
  nodeId: string,
  taskIds: string[],
): Promise<({ taskId: string } & TaskRequest)[]> {
  if (taskIds.length === 0) return [];
  const { rows } = await database.pool.query<{
    id: string;
    task_id: string;
    kind: string;
    text: string | null;
    requested_by: RequestedBy | null;
  }>(
    `UPDATE agent_runner.task_requests SET taken_at = now(), taken_by = $1
      WHERE taken_at IS NULL AND task_id = ANY($2)
      RETURNING id, task_id, kind, text, requested_by`,
    [nodeId, taskIds],
  );
  return rows
    .sort((a, b) => Number(a.id) - Number(b.id))
    .map((row) => ({
      taskId: row.task_id,
      ...(row.kind === 'answer'
        ? { kind: 'answer' as const, text: row.text ?? '' }
        : { kind: 'stop' as const }),
      ...(row.requested_by !== null ? { by: row.requested_by } : {}),
    }));
}

/** Where a node applies a request: the board of the task it runs. */
export interface TaskRequestTarget {
  /** Tasks this node runs now, ready to take a request (their board holds them). */
  liveTasks(): string[];
  /** Applies a request as the local API would; throws when it cannot (e.g. no question waiting). */
  apply(taskId: string, request: TaskRequest): void;
}

/**
 * A node's taker of requests: woken by NOTIFY on the node's LISTEN connection, and polling slowly while it
 * runs tasks. One take at a time; a wake-up during a take runs one more.
 */
export class TaskRequestTaker {
  private timer: NodeJS.Timeout | undefined;
  private taking: Promise<void> | null = null;
  private again = false;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly database: ControlDatabase,
    private readonly feed: FleetEventFeed,
    private readonly nodeId: string,
    private readonly target: TaskRequestTarget,
    private readonly log?: (line: string) => void,
    private readonly pollMs = POLL_MS,
  ) {}

  start(): void {
    this.unsubscribe = this.feed.onRequest(() => void this.wake());
    this.timer = setInterval(() => void this.wake(), this.pollMs);
    this.timer.unref();
  }

  /** Takes and applies the pending requests of the tasks this node runs (resolves when done). */
  wake(): Promise<void> {
    if (this.target.liveTasks().length === 0) return Promise.resolve();
    if (this.taking !== null) {
      this.again = true;
      return this.taking;
    }
    this.taking = (async () => {
      do {
        this.again = false;
        await this.takeOnce();
      } while (this.again);
    })().finally(() => {
      this.taking = null;
    });
    return this.taking;
  }

  private async takeOnce(): Promise<void> {
    let requests: Awaited<ReturnType<typeof takeTaskRequests>>;
    try {
      requests = await takeTaskRequests(this.database, this.nodeId, this.target.liveTasks());
    } catch {
      // The database is away: the requests wait in their table; the poll asks again.
      return;
    }
    for (const { taskId, ...request } of requests) {
      try {
        this.target.apply(taskId, request);
        this.log?.(`task ${taskId}: ${request.kind === 'stop' ? 'stopped' : 'answered'} from another node`);
      } catch (error) {
        this.log?.(
          `task ${taskId}: ${request.kind} from another node not applied: ${(error as Error).message}`,
        );
      }
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.unsubscribe?.();
  }
}
