/**
 * Another node's task, live: its journal read back from agent_runner.events, woken by LISTEN on
 * {@link EVENTS_CHANNEL}. One LISTEN connection per node (not per client): every follower of every task waits
 * on the same {@link FleetEventFeed}; while that connection is down (the database restarts) followers fall back
 * to a slow poll and the feed reconnects. The lines are the same as the local journal's, so the event stream
 * of a fleet task has the same shape as a local one. The same connection hears the requests (answer, stop) for
 * the tasks this node runs (task-requests.ts) and the queue's announcements of new tasks (task-queue.ts), which
 * wake an idle node.
 */
import pg from 'pg';
import type { JournalLine } from '../serve/journal-follow.js';
import type { ControlDatabase } from './control-database.js';
import { EVENTS_CHANNEL } from './event-sink.js';
import { FLEET_TASK_COLUMNS, fleetTaskRow, type FleetTaskColumns, type FleetTaskRow } from './fleet-tasks.js';
import { REQUESTS_CHANNEL, requestTask, type TaskRequest } from './task-requests.js';
import { QUEUE_CHANNEL } from './task-queue-options.js';

/** A follower's wait when no NOTIFY can arrive (the LISTEN connection is down), and the safety net when one is up. */
const SLOW_POLL_MS = 2_000;
const RECONNECT_MS = 1_000;
/** Lines read per query. */
const PAGE_LINES = 500;
/** States after which a task writes no more. */
const LIVE_STATES = new Set(['QUEUED', 'RUNNING']);

/** The node's one LISTEN connection, shared by every follower of every fleet task. */
export class FleetEventFeed {
  private client: pg.Client | null = null;
  private closed = false;
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Woken by a request for a task (answer, stop: task-requests.ts) and on each reconnect. */
  private readonly requestListeners = new Set<(taskId: string | null) => void>();
  /** Woken by a task queued on any node, and on each reconnect (a task queued while it was down). */
  private readonly queueListeners = new Set<() => void>();
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(private readonly database: ControlDatabase) {}

  /** Connects and listens; a failure here is retried in the background (followers poll meanwhile). */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Whether NOTIFYs can arrive now (else followers poll slowly). */
  listening(): boolean {
    return this.client !== null;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.database.url.url, connectionTimeoutMillis: 5_000 });
    const lost = () => {
      if (this.client === client) this.client = null;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      this.scheduleReconnect();
      // Followers wake and poll: a line written while the connection was down is not missed.
      this.wakeAll();
    };
    client.on('error', lost);
    client.on('end', () => {
      if (this.client === client) lost();
    });
    client.on('notification', (message) => {
      if (message.channel === EVENTS_CHANNEL && message.payload) this.wake(message.payload);
      if (message.channel === REQUESTS_CHANNEL)
        for (const listener of this.requestListeners) listener(message.payload ?? null);
      if (message.channel === QUEUE_CHANNEL) for (const listener of this.queueListeners) listener();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}; LISTEN ${REQUESTS_CHANNEL}; LISTEN ${QUEUE_CHANNEL}`);
      this.client = client;
      this.wakeAll();
      // A request or a task written while the connection was down is taken now rather than at the next poll.
      for (const listener of this.requestListeners) listener(null);
      for (const listener of this.queueListeners) listener();
    } catch {
      client.removeAllListeners();
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
      this.scheduleReconnect();
    }
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer !== undefined) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connect();
    }, RECONNECT_MS);
    this.reconnectTimer.unref();
  }

  private wake(taskId: string): void {
    for (const waiter of this.waiters.get(taskId) ?? []) waiter();
  }

  private wakeAll(): void {
    for (const taskId of this.waiters.keys()) this.wake(taskId);
  }

  /** Resolves at the next NOTIFY for `taskId`, after the slow poll, or when `signal` aborts. */
  wait(taskId: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(taskId) ?? new Set<() => void>();
      this.waiters.set(taskId, set);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0) this.waiters.delete(taskId);
        resolve();
      };
      const timer = setTimeout(done, SLOW_POLL_MS);
      signal.addEventListener('abort', done, { once: true });
      set.add(done);
    });
  }

  /** Calls `listener` at each request NOTIFY (its task id) and after each reconnect (null); returns the unsubscribe. */
  onRequest(listener: (taskId: string | null) => void): () => void {
    this.requestListeners.add(listener);
    return () => this.requestListeners.delete(listener);
  }

  /** Calls `listener` whenever a task is queued on the fleet (and after each reconnect); returns the unsubscribe. */
  onQueued(listener: () => void): () => void {
    this.queueListeners.add(listener);
    return () => this.queueListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.wakeAll();
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}

/** A fleet task's row as the API's detail shows it (the fleet's list entry), marked as served from the database. */
export type FleetTaskDetail = FleetTaskRow & {
  /** Where it runs: not on the node that answers. */
  fleet: true;
};

/** The task's row, or null when the fleet has no such task. */
export async function fleetTaskDetail(
  database: ControlDatabase,
  taskId: string,
): Promise<FleetTaskDetail | null> {
  const { rows } = await database.pool.query<FleetTaskColumns>(
    `SELECT ${FLEET_TASK_COLUMNS}
       FROM agent_runner.tasks t LEFT JOIN agent_runner.nodes n ON n.id = t.node_id WHERE t.id = $1`,
    [taskId],
  );
  const row = rows[0];
  return row === undefined ? null : { ...fleetTaskRow(row), fleet: true };
}

/**
 * A fleet task's journal lines after `afterLine`, then (with `follow`) live until the task's row says it
 * ended and every line is read. A database that is away is waited for (the follower polls slowly), so the
 * stream pauses rather than ends.
 */
export async function* fleetEventLines(
  database: ControlDatabase,
  feed: FleetEventFeed,
  taskId: string,
  options: { afterLine: number; follow: boolean; signal: AbortSignal },
): AsyncGenerator<JournalLine> {
  let last = options.afterLine;
  while (!options.signal.aborted) {
    let page: { seq: number; line: string }[];
    let live: boolean;
    try {
      // The state first: a line written before the end is then surely in the page that follows.
      const state = await database.pool.query<{ state: string }>(
        'SELECT state FROM agent_runner.tasks WHERE id = $1',
        [taskId],
      );
      live = LIVE_STATES.has(state.rows[0]?.state ?? '');
      const result = await database.pool.query<{ seq: number; line: string }>(
        `SELECT seq, line FROM agent_runner.events
          WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT ${PAGE_LINES}`,
        [taskId, last],
      );
      page = result.rows;
    } catch {
      if (!options.follow) return;
      await feed.wait(taskId, options.signal);
      continue;
    }
    for (const row of page) {
      last = row.seq;
      yield { id: row.seq, text: row.line, position: row.seq };
    }
    if (page.length === PAGE_LINES) continue;
    if (!options.follow || !live) return;
    await feed.wait(taskId, options.signal);
  }
}

/** The task's last line's seq (0: none yet): the primary key's last entry for the task, one index probe. */
export async function fleetLastLine(database: ControlDatabase, taskId: string): Promise<number> {
  const { rows } = await database.pool.query<{ seq: number | null }>(
    'SELECT max(seq) AS seq FROM agent_runner.events WHERE task_id = $1',
    [taskId],
  );
  return rows[0]?.seq ?? 0;
}

/** What the API serves for a task another node runs (see `createApi`'s `fleetTask`). */
export function fleetTaskSource(database: ControlDatabase, feed: FleetEventFeed) {
  return {
    detail: (taskId: string) => fleetTaskDetail(database, taskId),
    lastLine: (taskId: string) => fleetLastLine(database, taskId),
    lines: (taskId: string, options: { afterLine: number; follow: boolean; signal: AbortSignal }) =>
      fleetEventLines(database, feed, taskId, options),
    request: (taskId: string, request: TaskRequest) => requestTask(database, taskId, request),
  };
}
