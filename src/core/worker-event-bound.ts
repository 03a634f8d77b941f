/**
 * The bound on a worker run's events in the journal (and `--json`, and the progress): the worker writes its
 * own output, so it can print millions of event lines, each as long as it likes. Each run keeps its first
 * {@link MAX_WORKER_EVENTS_PER_RUN} events, each text in them cut to {@link MAX_WORKER_EVENT_TEXT_CHARS}
 * characters; a last event says how many were not kept. The run's whole output stays in its size-capped log
 * (`run-N/codex.jsonl`).
 */
import type { WorkerEvent } from './ports.js';

/** Worker events one run writes to the journal at most. */
export const MAX_WORKER_EVENTS_PER_RUN = 2_000;
/** Characters kept of each text of a worker event (a command, a message, a path). */
export const MAX_WORKER_EVENT_TEXT_CHARS = 4_000;

/** `text` cut to `max` characters, saying how much more there was. */
function bounded(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}… [cut: ${text.length.toLocaleString('en-US')} characters, showing the first ${max.toLocaleString('en-US')}]`;
}

/** The event with every text in it bounded. */
export function boundedWorkerEvent(event: WorkerEvent, max = MAX_WORKER_EVENT_TEXT_CHARS): WorkerEvent {
  switch (event.kind) {
    case 'thread_started':
      return { ...event, threadId: bounded(event.threadId, max) };
    case 'command_started':
      return { ...event, command: bounded(event.command, max) };
    case 'command_finished':
      return { ...event, command: bounded(event.command, max), status: bounded(event.status, max) };
    case 'file_changed':
      return { ...event, path: bounded(event.path, max), change: bounded(event.change, max) };
    case 'message':
      return { ...event, text: bounded(event.text, max) };
    case 'error':
      return { ...event, message: bounded(event.message, max) };
  }
}

/** Counts one run's events: which are kept (bounded) and how many were not. */
export class WorkerEventBound {
  private kept = 0;
  dropped = 0;

  constructor(private readonly max = MAX_WORKER_EVENTS_PER_RUN) {}

  /** The event to record (its texts bounded), or null when the run has had its share. */
  admit(event: WorkerEvent): WorkerEvent | null {
    if (this.kept >= this.max) {
      this.dropped += 1;
      return null;
    }
    this.kept += 1;
    return boundedWorkerEvent(event);
  }

  /** What the closing event says: how many were kept and how many were not (null when none was dropped). */
  summary(): { kept: number; dropped: number } | null {
    return this.dropped > 0 ? { kept: this.kept, dropped: this.dropped } : null;
  }
}
