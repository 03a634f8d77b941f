/**
 * A task's journal copied line by line into agent_runner.events (seq = the journal's line number), then a
 * NOTIFY on {@link EVENTS_CHANNEL} so that streams on other nodes wake. The journal on disk is the buffer: when
 * the database is away the copy stops where it is (it holds one batch in memory) and retries, so nothing is
 * lost and memory stays bounded however long the database is away; inserts are idempotent (a retried batch
 * that had landed changes nothing). The lines are the journal writer's, already redacted; they pass the
 * process's redaction once more (the control URL's password is known there).
 */
import { journalLines, type JournalLine } from '../serve/journal-follow.js';
import type { ControlDatabase } from './control-database.js';

/** The channel a node listens on; the payload is the task id. */
export const EVENTS_CHANNEL = 'agent_runner_events';
/** Lines written per INSERT. */
const BATCH_LINES = 200;
const RETRY_MS = 1_000;

export interface EventSinkOptions {
  /** Whether the task will write no more (then the last lines are copied and the copy ends). */
  ended: () => boolean;
  signal: AbortSignal;
  redactJsonText: (text: string) => string;
  log?: (line: string) => void;
  /**
   * The lease the lines are written under: a row names the node and its generation, and a batch is written only
   * while the task's row still names them (a node whose task was taken over writes nothing more).
   */
  lease?: { nodeId: string; generation: number };
}

/** Copies `journalFile` of `taskId` to the database until the task ended and every line is there. */
export async function copyJournalToDatabase(
  database: ControlDatabase,
  taskId: string,
  journalFile: string,
  options: EventSinkOptions,
): Promise<number> {
  let batch: JournalLine[] = [];
  let written = 0;
  let failing = false;
  const flush = async () => {
    while (batch.length > 0) {
      try {
        if (!(await insertBatch(database, taskId, batch, options.redactJsonText, options.lease))) {
          options.log?.(`task ${taskId}: its lease was taken over; no more events written from here`);
          return written;
        }
        written += batch.length;
        batch = [];
        if (failing) options.log?.(`task ${taskId}: events written again`);
        failing = false;
      } catch (error) {
        if (options.signal.aborted) throw error;
        // Once per outage: the journal holds the lines meanwhile.
        if (!failing)
          options.log?.(`task ${taskId}: events not written yet (${(error as Error).message}); retrying`);
        failing = true;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  };
  for await (const line of journalLines(journalFile, {
    afterLine: await lastSeq(database, taskId),
    follow: true,
    signal: options.signal,
    ended: options.ended,
  })) {
    batch.push(line);
    if (batch.length >= BATCH_LINES) await flush();
    // A line alone is written at once: the fleet's page is live, not a batch behind.
    else if (batch.length === 1) await flush();
  }
  await flush();
  return written;
}

/** The last line already in the database (a node that took the task over goes on from there). */
async function lastSeq(database: ControlDatabase, taskId: string): Promise<number> {
  for (;;) {
    try {
      const { rows } = await database.pool.query<{ seq: number | null }>(
        'SELECT max(seq) AS seq FROM agent_runner.events WHERE task_id = $1',
        [taskId],
      );
      return rows[0]?.seq ?? 0;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

async function insertBatch(
  database: ControlDatabase,
  taskId: string,
  lines: readonly JournalLine[],
  redactJsonText: (text: string) => string,
  lease: { nodeId: string; generation: number } | undefined,
): Promise<boolean> {
  const values: unknown[] = [taskId, lease?.nodeId ?? null, lease?.generation ?? null];
  const rows = lines.map((line, index) => {
    values.push(line.id, redactJsonText(line.text));
    return `($${index * 2 + 4}::integer, $${index * 2 + 5}::jsonb)`;
  });
  // Fenced: with a lease, nothing is written unless the task's row still names this node and generation.
  const { rows: held } = await database.pool.query<{ held: boolean }>(
    `WITH lease AS (
       SELECT 1 FROM agent_runner.tasks
        WHERE id = $1 AND ($2::text IS NULL OR (node_id = $2 AND lease_generation = $3::integer))),
     written AS (
       INSERT INTO agent_runner.events (task_id, seq, event, node_id, lease_generation)
       SELECT $1, seq, event, $2, $3 FROM (VALUES ${rows.join(', ')}) AS v (seq, event)
        WHERE EXISTS (SELECT 1 FROM lease)
       ON CONFLICT (task_id, seq) DO NOTHING RETURNING 1)
     SELECT EXISTS (SELECT 1 FROM lease) AS held,
            (SELECT pg_notify('${EVENTS_CHANNEL}', $1) FROM (SELECT 1) AS once
              WHERE EXISTS (SELECT 1 FROM written)) AS notified`,
    values,
  );
  return held[0]?.held ?? false;
}

/** A task's journal as the database holds it, in order (what a node resuming the task writes to its disk). */
export async function journalFromDatabase(database: ControlDatabase, taskId: string): Promise<string[]> {
  const { rows } = await database.pool.query<{ event: string }>(
    'SELECT event::text AS event FROM agent_runner.events WHERE task_id = $1 ORDER BY seq',
    [taskId],
  );
  return rows.map((row) => row.event);
}
