/**
 * The tasks of the fleet with the node that runs (or ran) it, newest first, a page at a time: what
 * `GET /api/tasks` of any node adds to its own list as `fleet`; one task's row is what `GET /api/tasks/:id` answers for a task another
 * node runs (fleet-events.ts).
 */
import type { ListKey } from '../serve/task-list-query.js';
import type { ControlDatabase } from './control-database.js';

/** One task of the fleet as the control database holds it. */
export interface FleetTaskRow {
  taskId: string;
  state: string;
  repoUrl: string;
  node: { id: string; host: string; url: string | null } | null;
  exitCode: number | null;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
  /** The question the task waits on (ask_human) while it does, as its node wrote it; answer it through any node. */
  question: string | null;
}

/** The columns of a {@link FleetTaskRow}, from `agent_runner.tasks t LEFT JOIN agent_runner.nodes n`. */
export const FLEET_TASK_COLUMNS =
  't.id, t.state, t.repo_url, t.node_id, n.host, n.url, t.exit_code, t.created_at, t.started_at, t.ended_at, t.question';

/** A row of {@link FLEET_TASK_COLUMNS} as the database driver gives it. */
export interface FleetTaskColumns {
  id: string;
  state: string;
  repo_url: string;
  node_id: string | null;
  host: string | null;
  url: string | null;
  exit_code: number | null;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  question: string | null;
}

export function fleetTaskRow(row: FleetTaskColumns): FleetTaskRow {
  return {
    taskId: row.id,
    state: row.state,
    repoUrl: row.repo_url,
    node: row.node_id === null ? null : { id: row.node_id, host: row.host ?? '', url: row.url },
    exitCode: row.exit_code,
    createdAt: row.created_at.toISOString(),
    startedAt: row.started_at?.toISOString() ?? null,
    endedAt: row.ended_at?.toISOString() ?? null,
    question: row.question,
  };
}

/** What a page of the fleet's tasks is asked for (task-list-query.ts). */
export interface FleetListQuery {
  limit: number;
  /** The page starts after this task (absent: at the newest). */
  after?: ListKey;
  states: string[] | null;
  nodes: string[] | null;
}

/**
 * A page of the fleet's tasks, newest first (created_at, then id, both descending), and where the next starts
 * (`end`: none). A keyset on (created_at, id): an index scan of `tasks_created_id` (or, filtered, of the state's
 * or the node's index), whatever the number of tasks. The key keeps created_at's microseconds.
 */
export async function listFleetTasks(
  database: ControlDatabase,
  query: FleetListQuery,
): Promise<{ tasks: FleetTaskRow[]; next: ListKey | 'end' }> {
  const { sql, values } = fleetListSql(query);
  const { rows } = await database.pool.query<FleetTaskColumns & { created_key: string }>(sql, values);
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    tasks: page.map(fleetTaskRow),
    next: rows.length > query.limit && last ? { createdAt: last.created_key, taskId: last.id } : 'end',
  };
}

/** The statement of a page (one more row than the page: whether there is a next one). */
export function fleetListSql(query: FleetListQuery): { sql: string; values: unknown[] } {
  const values: unknown[] = [];
  const where: string[] = [];
  if (query.after) {
    values.push(query.after.createdAt, query.after.taskId);
    where.push(`(t.created_at, t.id) < ($${values.length - 1}::timestamptz, $${values.length}::text)`);
  }
  if (query.states) {
    values.push(query.states);
    where.push(`t.state = ANY($${values.length}::text[])`);
  }
  if (query.nodes) {
    values.push(query.nodes);
    where.push(`t.node_id = ANY($${values.length}::text[])`);
  }
  values.push(query.limit + 1);
  return {
    sql: `SELECT ${FLEET_TASK_COLUMNS},
                 to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_key
            FROM agent_runner.tasks t LEFT JOIN agent_runner.nodes n ON n.id = t.node_id
           ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
           ORDER BY t.created_at DESC, t.id DESC LIMIT $${values.length}`,
    values,
  };
}
