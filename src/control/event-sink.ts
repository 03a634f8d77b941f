/**
 * A task's journal copied line by line into agent_runner.events (seq = the journal's line number), then a
 * NOTIFY on {@link EVENTS_CHANNEL} so that streams on other nodes wake. The journal on disk is the buffer: when
 * the database is away the copy stops where it is (it holds one batch in memory) and retries, so nothing is
 * lost and memory stays bounded however long the database is away; inserts are idempotent (a retried batch
 * that had landed changes nothing). The lines are the journal writer's, already redacted; they pass the
 * process's redaction once more (the control URL's password is known there).
 *
 * A line is stored as text, exactly as the journal holds it (not as jsonb, which refuses a `\u0000` or a lone
 * surrogate's escape and rewrites the rest), so a reader (another node's stream, the takeover's journal) gets
 * it back as it was. A line that text cannot hold as it is (bytes that are not UTF-8, a raw NUL, a lone
 * surrogate: never a line agent-runner writes, whose JSON escapes all three) or that the database refuses as
 * data is stored as a `journal_line_unstored` event saying why, at its own number; the lines after it go on.
 * Only the database being away (not a line's content) makes the copy wait.
 *
 * The same statement keeps the task's row's `question` (what every node shows as the question it waits on):
 * set by a line asking the person (`decision` ask_human), cleared by the line that answered (`human`) or its end.
 */
import * as z from 'zod';
import { askedQuestion, metaDecisionSchema } from '../core/records.js';
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
        const rows = batch.map((line) => storedRow(line, options.redactJsonText));
        if (!(await writeRows(database, taskId, rows, options))) {
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

/** One row of agent_runner.events: the line's number and the text stored for it. */
interface EventRow {
  seq: number;
  line: string;
}

/** A lone surrogate: a UTF-16 half that UTF-8 cannot encode (the driver would send U+FFFD in its place). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `line` cannot be stored as text exactly as the journal holds it; null when it can. */
export function unstorableReason(line: JournalLine): string | null {
  if (line.notUtf8) return 'the journal line is not UTF-8 (agent-runner writes none such)';
  if (line.text.includes('\u0000'))
    return 'the journal line holds a raw NUL character, which PostgreSQL text cannot hold';
  if (LONE_SURROGATE.test(line.text))
    return 'the journal line holds a lone surrogate, which UTF-8 cannot encode';
  return null;
}

/** The event stored in place of a line the database cannot hold (its own text always can). */
function unstoredLine(reason: string): string {
  return JSON.stringify({ type: 'journal_line_unstored', reason, at: new Date().toISOString() });
}

function storedRow(line: JournalLine, redactJsonText: (text: string) => string): EventRow {
  const reason = unstorableReason(line);
  return { seq: line.id, line: reason === null ? redactJsonText(line.text) : unstoredLine(reason) };
}

const askingLine = z.object({
  type: z.literal('decision'),
  decision: metaDecisionSchema.refine((decision) => decision.action === 'ask_human'),
});
const answeringLine = z.object({ type: z.enum(['human', 'task_finished']) });

/**
 * What `lines` say of the question the task waits on: the last line asking the person sets it, a later answer
 * (or nobody to answer: `human`) or the task's end clears it (null); undefined when they say nothing of it.
 */
export function questionAfter(lines: readonly string[]): string | null | undefined {
  let question: string | null | undefined;
  for (const line of lines) {
    // Only the events that ask or answer are parsed (a key of the event itself: a string's quotes are escaped).
    if (!/"type":"(?:decision|human|task_finished)"/.test(line)) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    const asking = askingLine.safeParse(value);
    if (asking.success) question = shownText(askedQuestion(asking.data.decision));
    else if (answeringLine.safeParse(value).success) question = null;
  }
  return question;
}

/** Text for a column that shows it (not the journal's record): a NUL or a lone surrogate shows as U+FFFD. */
function shownText(text: string): string {
  return text.replaceAll('\u0000', '\ufffd').replace(new RegExp(LONE_SURROGATE.source, 'g'), '\ufffd');
}

/** A refusal of the data itself (SQLSTATE class 22, or 54: a value over a limit), not of the connection. */
function refusedAsData(error: unknown): error is Error {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
}

/**
 * Writes `rows`; false when the lease is no longer this node's. A row the database refuses as data does not
 * hold back the others: the rows are written one by one, the refused one as a `journal_line_unstored` event.
 */
async function writeRows(
  database: ControlDatabase,
  taskId: string,
  rows: readonly EventRow[],
  options: Pick<EventSinkOptions, 'lease' | 'log' | 'redactJsonText'>,
): Promise<boolean> {
  try {
    return await insertRows(database, taskId, rows, options.lease);
  } catch (error) {
    if (!refusedAsData(error)) throw error;
  }
  for (const row of rows) {
    let held: boolean;
    try {
      held = await insertRows(database, taskId, [row], options.lease);
    } catch (error) {
      if (!refusedAsData(error)) throw error;
      const reason = options.redactJsonText(`PostgreSQL refused the journal line: ${error.message}`);
      options.log?.(`task ${taskId}: journal line ${row.seq} not stored as it is (${reason})`);
      held = await insertRows(
        database,
        taskId,
        [{ seq: row.seq, line: unstoredLine(reason) }],
        options.lease,
      );
    }
    if (!held) return false;
  }
  return true;
}

async function insertRows(
  database: ControlDatabase,
  taskId: string,
  rows: readonly EventRow[],
  lease: { nodeId: string; generation: number } | undefined,
): Promise<boolean> {
  const question = questionAfter(rows.map((row) => row.line));
  const values: unknown[] = [taskId, lease?.nodeId ?? null, lease?.generation ?? null];
  values.push(question !== undefined, question ?? null);
  const placeholders = rows.map((row, index) => {
    values.push(row.seq, row.line);
    return `($${index * 2 + 6}::integer, $${index * 2 + 7}::text)`;
  });
  // Fenced: with a lease, nothing is written unless the task's row still names this node and generation.
  const { rows: held } = await database.pool.query<{ held: boolean }>(
    `WITH lease AS (
       SELECT 1 FROM agent_runner.tasks
        WHERE id = $1 AND ($2::text IS NULL OR (node_id = $2 AND lease_generation = $3::integer))),
     written AS (
       INSERT INTO agent_runner.events (task_id, seq, line, node_id, lease_generation)
       SELECT $1, seq, line, $2, $3 FROM (VALUES ${placeholders.join(', ')}) AS v (seq, line)
        WHERE EXISTS (SELECT 1 FROM lease)
       ON CONFLICT (task_id, seq) DO NOTHING RETURNING 1),
     asked AS (
       UPDATE agent_runner.tasks SET question = $5::text
        WHERE id = $1 AND $4::boolean AND EXISTS (SELECT 1 FROM lease) RETURNING 1)
     SELECT EXISTS (SELECT 1 FROM lease) AS held,
            (SELECT pg_notify('${EVENTS_CHANNEL}', $1) FROM (SELECT 1) AS once
              WHERE EXISTS (SELECT 1 FROM written)) AS notified`,
    values,
  );
  return held[0]?.held ?? false;
}

/** A task's journal as the database holds it, in order (what a node resuming the task writes to its disk). */
export async function journalFromDatabase(database: ControlDatabase, taskId: string): Promise<string[]> {
  const { rows } = await database.pool.query<{ line: string }>(
    'SELECT line FROM agent_runner.events WHERE task_id = $1 ORDER BY seq',
    [taskId],
  );
  return rows.map((row) => row.line);
}
