/**
 * Task journals read once: the server's board and task pages ask for the same journals every second, and a
 * journal only grows (the runner appends whole lines). The cache keeps each journal's fold with where it stopped
 * reading, keyed on the file's identity, size and modification time: an unchanged journal is not read again,
 * a grown one is read from where the last read stopped and only its new lines are folded, anything else
 * (replaced, shrunk, rewritten in place) is read anew. What it answers is what `readTaskJournal` answers, with
 * one difference it shares with the event stream: a last line is folded only once its newline is written.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { stampedEventSchema } from '../core/events.js';
import { JournalInvalidError, parseJournalLine } from '../notes/event-journal.js';
import { JournalFold, journalPath, type JournalTaskState } from './task-journal-state.js';

/** How the cache looks at files; tests give one that counts. */
export interface JournalReader {
  /** The file's identity, size and modification time; null when it does not exist. */
  stat(file: string): { ino: bigint; size: bigint; mtimeNs: bigint } | null;
  /** Up to `length` bytes from `offset`. */
  read(file: string, offset: number, length: number): Buffer;
}

/** The file system, read synchronously (as `readTaskJournal` does). */
export const fileJournalReader: JournalReader = {
  stat: (file) => {
    const info = statSync(file, { bigint: true, throwIfNoEntry: false });
    return info ? { ino: info.ino, size: info.size, mtimeNs: info.mtimeNs } : null;
  },
  read: (file, offset, length) => {
    const descriptor = openSync(file, 'r');
    try {
      const buffer = Buffer.alloc(length);
      let filled = 0;
      while (filled < length) {
        const bytesRead = readSync(descriptor, buffer, filled, length - filled, offset + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return buffer.subarray(0, filled);
    } finally {
      closeSync(descriptor);
    }
  },
};

const CHUNK_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;

interface Entry {
  taskId: string;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  /** Bytes folded: up to the end of the last complete line taken. */
  offset: number;
  /** Lines (blank ones included) before `offset`: the line numbers of damage. */
  lines: number;
  fold: JournalFold;
  result: JournalTaskState;
  /** The damage found (a journal only grows, so it stays damaged until it is replaced). */
  damage: JournalInvalidError | null;
}

export class JournalTailCache {
  private readonly entries = new Map<string, Entry>();
  private readonly reader: JournalReader;
  private readonly maxEntries: number;

  constructor(options: { reader?: JournalReader; maxEntries?: number } = {}) {
    this.reader = options.reader ?? fileJournalReader;
    this.maxEntries = options.maxEntries ?? 512;
  }

  /** The task's journal folded, as `readTaskJournal(runDir, taskId)`: null when it has none. */
  read(runDir: string, taskId: string): JournalTaskState | null {
    const file = journalPath(runDir);
    const seen = this.reader.stat(file);
    if (seen === null) {
      this.entries.delete(file);
      return null;
    }
    let entry = this.entries.get(file);
    const unchanged = entry && entry.size === seen.size && entry.mtimeNs === seen.mtimeNs;
    const grown = entry && entry.ino === seen.ino && seen.size > entry.size && entry.taskId === taskId;
    if (!entry || entry.ino !== seen.ino || entry.taskId !== taskId || (!unchanged && !grown)) {
      const fold = new JournalFold(taskId);
      entry = { taskId, ...seen, offset: 0, lines: 0, fold, result: fold.result(), damage: null };
      this.readNew(file, entry, seen.size);
    } else if (!unchanged) {
      this.readNew(file, entry, seen.size);
    }
    entry.ino = seen.ino;
    entry.size = seen.size;
    entry.mtimeNs = seen.mtimeNs;
    // Most recently used last: the oldest goes first when there are too many.
    this.entries.delete(file);
    this.entries.set(file, entry);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(oldest);
    }
    if (entry.damage) throw entry.damage;
    return entry.result;
  }

  /** Folds the complete lines between the entry's offset and `size`. */
  private readNew(file: string, entry: Entry, size: bigint): void {
    if (entry.damage) return;
    const end = Number(size);
    let folded = false;
    /** A line that is not JSON: the torn last line, unless a line follows it (then it is damage). */
    let torn: { line: number } | null = null;
    let position = entry.offset;
    let lineNumber = entry.lines;
    let carry = Buffer.alloc(0);
    while (position < end) {
      const chunk = this.reader.read(file, position, Math.min(CHUNK_BYTES, end - position));
      if (chunk.length === 0) break;
      position += chunk.length;
      const bytes = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      let start = 0;
      let newline = bytes.indexOf(NEWLINE, start);
      while (newline !== -1) {
        const text = bytes.subarray(start, newline).toString('utf8');
        // Where the line ends in the file, its newline included.
        const lineEnd = position - bytes.length + newline + 1;
        start = newline + 1;
        newline = bytes.indexOf(NEWLINE, start);
        lineNumber += 1;
        if (text.trim() === '') {
          if (torn === null) this.consumed(entry, lineEnd, lineNumber);
          continue;
        }
        if (torn !== null) {
          entry.damage = new JournalInvalidError(file, torn.line, '(not a JSON line)');
          return;
        }
        try {
          const parsed = parseJournalLine(file, lineNumber, text, stampedEventSchema);
          if (parsed === null) {
            torn = { line: lineNumber };
            continue;
          }
          entry.fold.apply(parsed.event);
          folded = true;
        } catch (error) {
          if (!(error instanceof JournalInvalidError)) throw error;
          entry.damage = error;
          return;
        }
        this.consumed(entry, lineEnd, lineNumber);
      }
      carry = Buffer.from(bytes.subarray(start));
    }
    // An unfinished last line after a line that is not JSON: that line is damage too (something follows it).
    if (torn !== null && carry.toString('utf8').trim() !== '')
      entry.damage = new JournalInvalidError(file, torn.line, '(not a JSON line)');
    if (folded) entry.result = entry.fold.result();
  }

  private consumed(entry: Entry, offset: number, lines: number): void {
    entry.offset = offset;
    entry.lines = lines;
  }
}
