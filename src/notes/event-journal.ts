/**
 * The task's event journal: `.agent-runner/runs/<TASK-ID>/events.jsonl`, one event per line, appended as it
 * happens (synchronously, so a crash of the runner loses at most the event being written). `resume`
 * rebuilds the task from it.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { StampedEvent } from '../core/events.js';
import type { Redactor } from './redact.js';

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
      appendFileSync(this.file, `${this.redact(JSON.stringify(event))}\n`);
    } catch (error) {
      this.writeError = error as Error;
      throw error;
    }
  }
}

/**
 * Reads a journal back (a task's events, or another JSON-lines journal such as a project's); a torn last line
 * (crash mid-write) is ignored.
 */
export function readJournal<T = StampedEvent>(file: string): T[] {
  const events: T[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line) as T);
    } catch {
      // A partial line from a crash mid-append.
    }
  }
  return events;
}
