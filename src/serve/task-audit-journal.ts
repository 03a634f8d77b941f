/**
 * The audit events a server writes into the journals of the tasks it acts on (who started, answered, stopped
 * or resumed each). A task started or resumed here has its audit events held until its attempt has written
 * `task_started` (the journal's first line stays the runner's), then appended; a task the server does not run
 * gets them appended at once, when it has a journal. Lines pass the same redaction and control escaping as
 * the runner's own (src/notes/event-journal.ts).
 */
import { appendFileSync, existsSync } from 'node:fs';
import type { StampedEvent } from '../core/events.js';
import type { AuditEntry } from '../identity/audit-entry.js';
import { showControlsInJson } from '../notes/terminal-text.js';

export class TaskAuditJournal {
  /** Tasks launched here whose attempt has not journaled its start yet, with the events held for them. */
  private readonly held = new Map<string, StampedEvent[]>();

  constructor(
    private readonly journalFile: (taskId: string) => string,
    private readonly redactJsonText: (text: string) => string,
  ) {}

  /** A task's attempt is launched here: its audit events wait for its `task_started`. */
  launching(taskId: string): void {
    this.held.set(taskId, this.held.get(taskId) ?? []);
  }

  /** An event of a task launched here (the hook the runner calls before it journals the event). */
  onEvent(taskId: string, event: { type: string }): void {
    // After the runner's own append of this event (the hook runs first).
    if (event.type === 'task_started') queueMicrotask(() => this.release(taskId));
  }

  /** The task's run is over (whether it journaled anything or not). */
  ended(taskId: string): void {
    this.release(taskId);
  }

  record(taskId: string, entry: AuditEntry, at: string): void {
    const event: StampedEvent = { type: 'audit', ...entry, at };
    const held = this.held.get(taskId);
    if (held !== undefined) held.push(event);
    else this.append(taskId, event);
  }

  private release(taskId: string): void {
    const held = this.held.get(taskId) ?? [];
    this.held.delete(taskId);
    for (const event of held) this.append(taskId, event);
  }

  private append(taskId: string, event: StampedEvent): void {
    const file = this.journalFile(taskId);
    // A task with no journal of its own (not started yet, or a split PRD's parent): the audit log has it.
    if (!existsSync(file)) return;
    appendFileSync(file, `${showControlsInJson(this.redactJsonText(JSON.stringify(event)))}\n`);
  }
}
