/**
 * What tells a note the runner wrote from any other file in `.agent-runner/`: the sha256 of its bytes, recorded
 * when the runner writes it, in the task's journal (`note_written`) or, for a project's parent note, in the
 * project's (`project_note_written`). Only the host writes journals; a note whose bytes no longer match (edited,
 * replaced, copied in, merged from a branch) is not the runner's.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { writtenNoteSchema, type RunnerEvent } from '../core/events.js';
import type { ProjectEvent } from '../parallel/project-events.js';
import { PROJECT_JOURNAL } from '../parallel/project-journal.js';
import { DELIVERY_JOURNAL } from '../deliver/delivery-record.js';
import { EVENTS_FILE } from './event-journal.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Where the runner records the notes it writes: a journal of the task's run directory, and the event. */
const NOTE_RECORDS: readonly { file: string; type: RunnerEvent['type'] | ProjectEvent['type'] }[] = [
  { file: EVENTS_FILE, type: 'note_written' },
  { file: PROJECT_JOURNAL, type: 'project_note_written' },
  // A delivery adds its section to a finished task's note and records the new digest beside its outcome.
  { file: DELIVERY_JOURNAL, type: 'note_written' },
];

/** How much of a journal's end is read first: a note's record is among its last lines (only the summary follows). */
const TAIL_BYTES = 64 * 1024;

/** The digest of a note's bytes (UTF-8 for text): sha256, hex. */
export function noteDigest(content: string | Uint8Array): string {
  return createHash('sha256').update(content).digest('hex');
}

/**
 * The digests recorded for the note `noteName` of the task whose run directory is `runDir`: the latest record
 * of each journal that names a note of that name. Empty when none does (a journal of an earlier version, no
 * journal, a damaged one).
 */
export async function recordedNoteDigests(runDir: string, noteName: string): Promise<string[]> {
  const digests: string[] = [];
  for (const record of NOTE_RECORDS) {
    const written = writtenNoteSchema.safeParse(
      await lastEventOf(path.join(runDir, record.file), record.type),
    );
    if (written.success && path.basename(written.data.path) === noteName) digests.push(written.data.sha256);
  }
  return digests;
}

/**
 * The last line of the journal `file` that is an event of `type`, parsed; null when there is none, or the file
 * is not a regular file (never followed through a link). Reads backwards from the end, a growing window at a
 * time, so a long journal costs its tail only.
 */
async function lastEventOf(file: string, type: string): Promise<unknown> {
  const handle = await open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(() => null);
  if (handle === null) return null;
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return null;
    for (let window = Math.min(stats.size, TAIL_BYTES); ; window = Math.min(stats.size, window * 4)) {
      const buffer = Buffer.alloc(window);
      const { bytesRead } = await handle.read(buffer, 0, window, stats.size - window);
      const lines = buffer.subarray(0, bytesRead).toString('utf8').split('\n');
      // The window's first line may start mid-line: it is read whole with the next window.
      if (window < stats.size) lines.shift();
      for (const line of lines.reverse()) {
        const event = eventOfType(line, type);
        if (event !== null) return event;
      }
      if (window >= stats.size) return null;
    }
  } finally {
    await handle.close();
  }
}

/** The line parsed when it is a JSON event of `type`, else null. */
function eventOfType(line: string, type: string): unknown {
  // A cheap test before parsing; the parsed line's own `type` decides.
  if (!line.includes(`"type":${JSON.stringify(type)}`)) return null;
  try {
    const value = JSON.parse(line) as { type?: unknown } | null;
    return value !== null && value.type === type ? value : null;
  } catch {
    return null;
  }
}
