/**
 * Every task of the fleet with the node that runs (or ran) it, newest first: what `GET /api/tasks` of any
 * node adds to its own list as `fleet`.
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
}

/** The newest tasks of the fleet (at most `limit`). */
export async function listFleetTasks(database: ControlDatabase, limit = 500): Promise<FleetTaskRow[]> {
  const { rows } = await database.pool.query<{
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
  }>(
    `SELECT t.id, t.state, t.repo_url, t.node_id, n.host, n.url, t.exit_code, t.created_at, t.started_at, t.ended_at
       FROM agent_runner.tasks t LEFT JOIN agent_runner.nodes n ON n.id = t.node_id
      ORDER BY t.created_at DESC, t.id LIMIT $1`,
    [limit],
  );
  return rows.map((row) => ({
    taskId: row.id,
    state: row.state,
    repoUrl: row.repo_url,
    node: row.node_id === null ? null : { id: row.node_id, host: row.host ?? '', url: row.url },
    exitCode: row.exit_code,
    createdAt: row.created_at.toISOString(),
    startedAt: row.started_at?.toISOString() ?? null,
    endedAt: row.ended_at?.toISOString() ?? null,
  }));
}
