/**
 * `agent-runner control status`: the fleet as the control database sees it. Nodes with their load and the
 * age of their last heartbeat (stale past the lease, `control.leaseSeconds`), the queue's depth, the oldest queued task.
 * Ages are measured by the database's clock alone, so a node whose clock is off does not look stale or fresh.
 */
import type { ControlDatabase } from './control-database.js';
import { NODE_STALE_SECONDS } from './task-queue-options.js';

export interface FleetNode {
  id: string;
  host: string;
  pid: number;
  url: string | null;
  capacity: number;
  running: number;
  heartbeatAgeSeconds: number;
  stale: boolean;
}

export interface FleetStatus {
  nodes: FleetNode[];
  /** Tasks queued and not yet taken by a node. */
  queued: number;
  /** Tasks a node runs now. */
  running: number;
  oldestQueued: { taskId: string; repoUrl: string; ageSeconds: number } | null;
}

/** `staleSeconds`: the fleet's lease (`control.leaseSeconds`), past which a node's tasks are taken over. */
export async function fleetStatus(
  database: ControlDatabase,
  staleSeconds = NODE_STALE_SECONDS,
): Promise<FleetStatus> {
  const { pool } = database;
  const nodes = await pool.query<{
    id: string;
    host: string;
    pid: number;
    url: string | null;
    capacity: number;
    running: number;
    age: number;
  }>(
    `SELECT id, host, pid, url, capacity, running,
            extract(epoch FROM now() - heartbeat_at)::float8 AS age
       FROM agent_runner.nodes ORDER BY id`,
  );
  const counts = await pool.query<{ queued: string; running: string }>(
    `SELECT count(*) FILTER (WHERE state = 'QUEUED') AS queued,
            count(*) FILTER (WHERE state NOT IN ('QUEUED', 'COMPLETE', 'FAILED', 'NEEDS_REVIEW')) AS running
       FROM agent_runner.tasks`,
  );
  const oldest = await pool.query<{ id: string; repo_url: string; age: number }>(
    `SELECT id, repo_url, extract(epoch FROM now() - created_at)::float8 AS age
       FROM agent_runner.tasks WHERE state = 'QUEUED' ORDER BY created_at LIMIT 1`,
  );
  const first = oldest.rows[0];
  return {
    nodes: nodes.rows.map((row) => ({
      id: row.id,
      host: row.host,
      pid: row.pid,
      url: row.url,
      capacity: row.capacity,
      running: row.running,
      heartbeatAgeSeconds: Math.round(row.age * 10) / 10,
      stale: row.age > staleSeconds,
    })),
    queued: Number(counts.rows[0]?.queued ?? 0),
    running: Number(counts.rows[0]?.running ?? 0),
    oldestQueued: first
      ? { taskId: first.id, repoUrl: first.repo_url, ageSeconds: Math.round(first.age) }
      : null,
  };
}

/** The status as lines for a terminal. */
export function formatFleetStatus(status: FleetStatus): string[] {
  const lines = [
    `Queue: ${status.queued} queued, ${status.running} running` +
      (status.oldestQueued
        ? `; oldest queued ${status.oldestQueued.taskId} (${status.oldestQueued.repoUrl}), ${status.oldestQueued.ageSeconds} s`
        : ''),
  ];
  if (status.nodes.length === 0)
    return [...lines, 'No nodes (start one with agent-runner serve --control URL).'];
  lines.push('NODE\tHOST\tLOAD\tHEARTBEAT');
  for (const node of status.nodes)
    lines.push(
      [
        node.id,
        `${node.host} (pid ${node.pid})`,
        `${node.running}/${node.capacity}`,
        `${node.heartbeatAgeSeconds} s ago${node.stale ? ' STALE' : ''}`,
      ].join('\t'),
    );
  return lines;
}
