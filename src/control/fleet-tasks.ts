/**
 * Every task of the fleet with the node that runs (or ran) it, newest first: what `GET /api/tasks` of any
 * node adds to its own list as `fleet`; one task's row is what `GET /api/tasks/:id` answers for a task another
 * node runs (fleet-events.ts).
 */
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

/** The newest tasks of the fleet (at most `limit`). */
export async function listFleetTasks(database: ControlDatabase, limit = 500): Promise<FleetTaskRow[]> {
  const { rows } = await database.pool.query<FleetTaskColumns>(
    `SELECT ${FLEET_TASK_COLUMNS}
       FROM agent_runner.tasks t LEFT JOIN agent_runner.nodes n ON n.id = t.node_id
      ORDER BY t.created_at DESC, t.id LIMIT $1`,
    [limit],
  );
  return rows.map(fleetTaskRow);
}
