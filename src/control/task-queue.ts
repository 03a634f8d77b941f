/**
 * Enqueueing a task on the fleet: its row in agent_runner.tasks and its pg-boss job are written in one
 * transaction, so a task is never queued without its row nor listed without its job. The same transaction
 * NOTIFYs {@link QUEUE_CHANNEL} (delivered at the commit, with the job): an idle node is woken by it and takes
 * the task at once instead of at its next poll, which is only the safety net.
 */
import PgBoss from 'pg-boss';
import type pg from 'pg';
import { UserError } from '../errors.js';
import { taskStateRef } from '../remote/remote-task-state.js';
import { displayUrl } from '../remote/remote-url.js';
import { assertValidTaskId } from '../workspace/layout.js';
import { QUEUE_SCHEMA, type ControlDatabase } from './control-database.js';
import {
  QUEUE_CHANNEL,
  TASK_QUEUE,
  isIssueNumber,
  type FleetDelivery,
  type FleetFollowup,
  type FleetReviewFollowup,
  type TaskJobData,
} from './task-queue-options.js';

/** What a queued task is: a remote repository, a base, a PRD's text. */
export interface QueuedTaskRequest {
  taskId: string;
  /** The remote's URL; credentials in it are stripped before it is stored (each node has its own). */
  repoUrl: string;
  base?: string;
  prd: string;
  /** Delivered by the node that ends it (a webhook's task from an issue: `pr`, `closes`). */
  deliver?: FleetDelivery;
}

/** A pg-boss instance on the control database that sends and fetches only (no maintenance, no migration). */
export async function startQueueClient(database: ControlDatabase, options: { supervise?: boolean } = {}) {
  const boss = new PgBoss({
    connectionString: database.url.url,
    schema: QUEUE_SCHEMA,
    migrate: false,
    supervise: options.supervise ?? false,
    schedule: false,
    max: 2,
  });
  // Connection errors surface on the calls that fail; the emitter's own 'error' would end the process.
  boss.on('error', () => undefined);
  await boss.start();
  return boss;
}

/** pg-boss's Db port on one client of ours: its statements join our transaction. */
export function inTransaction(client: pg.PoolClient): PgBoss.Db {
  return { executeSql: (text, values) => client.query(text, values) };
}

/** Writes the task's row and its job; returns the job's id. Refuses an id the fleet already has. */
export async function enqueueTask(
  database: ControlDatabase,
  boss: PgBoss,
  request: QueuedTaskRequest,
): Promise<string> {
  assertValidTaskId(request.taskId);
  if (request.prd.trim() === '') throw new UserError('prd_invalid', 'The PRD is empty: write what to build.');
  const { deliver } = request;
  if (deliver?.closes !== undefined && !isIssueNumber(deliver.closes))
    throw new UserError(
      'usage',
      `The issue to close must be a positive number, not ${String(deliver.closes)}.`,
    );
  const data: TaskJobData = {
    taskId: request.taskId,
    ...(deliver
      ? { deliver: { pr: true, ...(deliver.closes !== undefined ? { closes: deliver.closes } : {}) } }
      : {}),
  };
  return queueJob(database, boss, data, async (client) => {
    const inserted = await client.query(
      `INSERT INTO agent_runner.tasks (id, repo_url, base, prd) VALUES ($1, $2, $3, $4)
         ON CONFLICT (id) DO NOTHING`,
      [request.taskId, displayUrl(request.repoUrl), request.base ?? null, request.prd],
    );
    if (inserted.rowCount === 0)
      throw new UserError(
        'usage',
        `Task ${request.taskId} is already in the fleet's queue: give another --task-id.`,
      );
  });
}

/**
 * In one transaction: `row` (the task's row written or changed, throwing to refuse), the job (one per task:
 * `singletonKey`), the job's id on the row, and the queue's NOTIFY that wakes an idle node at its commit.
 */
async function queueJob(
  database: ControlDatabase,
  boss: PgBoss,
  data: TaskJobData,
  row: (client: pg.PoolClient) => Promise<void>,
): Promise<string> {
  const client = await database.pool.connect();
  try {
    await client.query('BEGIN');
    await row(client);
    const jobId = await boss.send(TASK_QUEUE, data, { singletonKey: data.taskId, db: inTransaction(client) });
    if (jobId === null) throw new UserError('usage', `Task ${data.taskId} already has a job in the queue.`);
    await client.query('UPDATE agent_runner.tasks SET job_id = $2 WHERE id = $1', [data.taskId, jobId]);
    await client.query('SELECT pg_notify($1, $2)', [QUEUE_CHANNEL, data.taskId]);
    await client.query('COMMIT');
    return jobId;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Queues a follow-up of a task of the fleet that has ended (COMPLETE, NEEDS_REVIEW or FAILED): its row back to
 * QUEUED and a job carrying the instruction, in one transaction, as {@link enqueueTask}. Any node takes it: the
 * task's journal from the database, its branch from the remote, then the follow-up. Returns the job's id; a task
 * the fleet does not have, or one that has not ended, is refused.
 */
export async function enqueueFollowup(
  database: ControlDatabase,
  boss: PgBoss,
  taskId: string,
  followup: FleetFollowup,
): Promise<string> {
  assertValidTaskId(taskId);
  if (followup.message.trim() === '')
    throw new UserError('usage', 'The follow-up instruction is empty. Say what to change.');
  return queueJob(database, boss, { taskId, followup }, (client) => reopenEndedTask(client, taskId));
}

/**
 * Queues a follow-up from review of a task of the fleet that has ended, as {@link enqueueFollowup}: the node that
 * takes it reads the request's review itself (src/serve/fleet-review-followup.ts). Refused as that one is.
 *
 * With `adopt` (a review's webhook: the event's repository), a task the fleet does not have (started by
 * `run --pr` or the Action) is adopted instead of refused: its row is written in the same transaction as the job
 * (`INSERT ... ON CONFLICT DO NOTHING`, so two reviews of the same unknown task at two nodes make one row: the
 * second finds the first's row queued and is refused as a task that has not ended), and the node that takes the
 * job, finding no journal in the fleet's copy, rebuilds the task from the remote's state ref
 * (src/serve/fleet-adopt.ts). Nothing of the event's text is on the row but the repository's URL, as for an
 * issue's task; its PRD is a line naming where the task's own PRD is.
 */
export async function enqueueReviewFollowup(
  database: ControlDatabase,
  boss: PgBoss,
  taskId: string,
  review: FleetReviewFollowup,
  adopt?: { repoUrl: string },
): Promise<string> {
  assertValidTaskId(taskId);
  return queueJob(database, boss, { taskId, review }, async (client) => {
    if (adopt !== undefined && (await insertAdoptedTask(client, taskId, adopt.repoUrl))) return;
    await reopenEndedTask(client, taskId);
  });
}

/** The PRD an adopted task's row shows until the node has read the task's own from the remote. */
export function adoptedTaskPrd(taskId: string): string {
  return `# ${taskId}\n\nA task this fleet did not run, adopted for a review of its request: its PRD, criteria and journal are read from the remote's ${taskStateRef(taskId)}.\n`;
}

/**
 * The adopted task's own PRD (read by the node that adopted it from the task's journal on the remote, redacted as
 * that journal is) in place of the placeholder; a row whose PRD is not the placeholder is left as it is.
 */
export async function recordAdoptedPrd(
  database: ControlDatabase,
  taskId: string,
  prd: string,
): Promise<void> {
  await database.pool.query('UPDATE agent_runner.tasks SET prd = $2 WHERE id = $1 AND prd = $3', [
    taskId,
    prd,
    adoptedTaskPrd(taskId),
  ]);
}

/** A row for a task the fleet does not have; false when the fleet has one (or another delivery just wrote it). */
async function insertAdoptedTask(client: pg.PoolClient, taskId: string, repoUrl: string): Promise<boolean> {
  if (repoUrl.trim() === '') return false;
  const inserted = await client.query(
    `INSERT INTO agent_runner.tasks (id, repo_url, base, prd) VALUES ($1, $2, NULL, $3)
       ON CONFLICT (id) DO NOTHING`,
    [taskId, displayUrl(repoUrl), adoptedTaskPrd(taskId)],
  );
  return inserted.rowCount === 1;
}

/** The ended task's row back to QUEUED (no node, no end); refuses a task the fleet does not have or that runs. */
async function reopenEndedTask(client: pg.PoolClient, taskId: string): Promise<void> {
  const queued = await client.query(
    `UPDATE agent_runner.tasks SET state = 'QUEUED', node_id = NULL, exit_code = NULL, ended_at = NULL,
            question = NULL
       WHERE id = $1 AND state IN ('COMPLETE', 'NEEDS_REVIEW', 'FAILED')`,
    [taskId],
  );
  if (queued.rowCount === 0)
    throw new UserError(
      'usage',
      `Task ${taskId} is not a task of the fleet that has ended: a follow-up continues a task that ended ` +
        '(COMPLETE, NEEDS_REVIEW or FAILED). See `agent-runner control status`.',
    );
}
