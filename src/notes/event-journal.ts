/**
 * The task's event journal: `.agent-runner/runs/<TASK-ID>/events.jsonl`, one event per line, appended as it
 * happens (synchronously, so a crash of the runner loses at most the event being written). `resume`
 * rebuilds the task from it.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type * as z from 'zod';
import type { StampedEvent } from '../core/events.js';
import { UserError } from '../errors.js';
import type { Redactor } from './redact.js';
import { showControlsInJson } from './terminal-text.js';

export const EVENTS_FILE = 'events.jsonl';

export class EventJournal {
  readonly file: string;
  /**
   * Set when a write failed (disk full...). The first failure is thrown, so the runner stops the task with
   * it (the journal is what `resume` rebuilds from); later appends are skipped quietly.
   */
  writeError: Error | null = null;

  constructor(
    runDir: string,
    private readonly redact: Redactor = (text) => text,
  ) {
    mkdirSync(runDir, { recursive: true });
    this.file = path.join(runDir, EVENTS_FILE);
  }

  append(event: StampedEvent): void {
    if (this.writeError) return;
    try {
      // Controls JSON.stringify leaves raw (C1, bidi) are written as JSON escapes: `cat` shows them, never obeys.
      appendFileSync(this.file, `${showControlsInJson(this.redact(JSON.stringify(event)))}\n`);
    } catch (error) {
      this.writeError = error as Error;
      throw error;
    }
  }
}

/** A journal line that is not what was written: `resume` cannot rebuild the task from it. */
export class JournalInvalidError extends UserError {
  constructor(
    readonly file: string,
    readonly line: number,
    /** What is wrong, e.g. `(worker_finished) exitCode: expected number`. */
    readonly problem: string,
  ) {
    super(
      'journal_invalid',
      `The journal ${file} is damaged at line ${line} ${problem}. It is not what agent-runner wrote (edited, ` +
        'or written by another program), so the task cannot be rebuilt from it. Restore the line, or start the ' +
        'task again with `agent-runner run --prd FILE`.',
    );
  }
}

/**
 * One line of a journal: its event, or `null` when the line is not JSON (the caller decides: a torn last line
 * is a crash mid-append, anywhere else it is damage). An event `schema` refuses is damage:
 * {@link JournalInvalidError}.
 */
export function parseJournalLine<T = StampedEvent>(
  file: string,
  lineNumber: number,
  line: string,
  schema?: z.ZodType<T>,
): { event: T } | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!schema) return { event: value as T };
  const parsed = schema.safeParse(value);
  if (parsed.success) return { event: parsed.data };
  const type = (value as { type?: unknown } | null)?.type;
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  throw new JournalInvalidError(
    file,
    lineNumber,
    `(${typeof type === 'string' ? type : 'no event type'}) ${where}${issue?.message ?? 'invalid'}`,
  );
}

/**
 * Reads a journal back (a task's events, or another JSON-lines journal such as a project's), validating every
 * event against `schema` when one is given. A torn last line is a crash mid-append (the runner appends one
 * line at a time) and is ignored; a line that is not JSON anywhere else, or an event the schema refuses, is
 * damage: {@link JournalInvalidError}.
 */
export function readJournal<T = StampedEvent>(file: string, schema?: z.ZodType<T>): T[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  let last = lines.length - 1;
  while (last >= 0 && !lines[last]!.trim()) last -= 1;
  const events: T[] = [];
  lines.forEach((line, index) => {
    if (!line.trim()) return;
    const parsed = parseJournalLine(file, index + 1, line, schema);
    if (parsed) events.push(parsed.event);
    else if (index !== last) throw new JournalInvalidError(file, index + 1, '(not a JSON line)');
  });
  return events;
}
