/**
 * A task's journal line by line, from a given line on, then live as the runner appends: what the server's
 * event stream sends. The journal is append-only JSONL written by agent-runner (already redacted); a line is
 * sent only once complete (its newline written). Reading waits for the consumer: a client that does not
 * read stops the reading, so the server holds at most one chunk per client.
 */
import { open, stat } from 'node:fs/promises';

export interface JournalLine {
  /**
   * 1-based line number, counted from the start of the journal (read from `fromOffset`: counted from there). A
   * fleet task's line read from the database: its `seq`, which is its line number.
   */
  id: number;
  text: string;
  /**
   * Where a reader resumes right after this line, without reading what comes before: the byte offset just past
   * its newline in the journal file, or (a line of the database) its `seq`. The event stream's id is made of it.
   */
  position: number;
  /**
   * Set when the line's bytes are not UTF-8 (agent-runner never writes such a line; another program did): `text`
   * shows each bad sequence as U+FFFD, so it is not the line as the file holds it.
   */
  notUtf8?: true;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** One line's bytes as text: decoded whole, so a character is never cut where a read of the file ended. */
function decodeLine(bytes: Buffer, id: number, position: number): JournalLine {
  try {
    return { id, text: strictUtf8.decode(bytes), position };
  } catch {
    return { id, text: bytes.toString('utf8'), notUtf8: true, position };
  }
}

const CHUNK_BYTES = 64 * 1024;
/** How often a followed journal is looked at for new lines (the runner appends as events happen). */
export const FOLLOW_POLL_MS = 25;

/** Waits `ms` or until `signal` aborts; its abort listener goes with it (a follow sleeps thousands of times). */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The lines after `afterLine` (0: from the start), or those from the byte offset `fromOffset` on (a line's
 * `position`: nothing before it is read). With `follow`, waits for more until `signal` aborts or `ended()` says
 * the task will write no more (then the last lines are read and it returns).
 */
export async function* journalLines(
  file: string,
  options: {
    afterLine: number;
    fromOffset?: number;
    follow: boolean;
    signal: AbortSignal;
    ended?: () => boolean;
  },
): AsyncGenerator<JournalLine> {
  let offset = options.fromOffset ?? 0;
  let line = 0;
  // Bytes, not text, until a line is whole: a read that ends inside a multi-byte character must not change it.
  // The start of a line still being read, in pieces (a long line is joined once, when its newline comes).
  let pending: Buffer[] = [];
  const buffer = Buffer.alloc(CHUNK_BYTES);
  while (!options.signal.aborted) {
    const size = await stat(file).then(
      (info) => info.size,
      () => 0,
    );
    if (size > offset) {
      const handle = await open(file, 'r');
      try {
        while (offset < size && !options.signal.aborted) {
          const { bytesRead } = await handle.read(buffer, 0, Math.min(CHUNK_BYTES, size - offset), offset);
          if (bytesRead === 0) break;
          offset += bytesRead;
          const chunk = buffer.subarray(0, bytesRead);
          let start = 0;
          let newline = chunk.indexOf(0x0a);
          while (newline !== -1) {
            const bytes = Buffer.concat([...pending, chunk.subarray(start, newline)]);
            pending = [];
            start = newline + 1;
            newline = chunk.indexOf(0x0a, start);
            const decoded = decodeLine(bytes, line + 1, offset - bytesRead + start);
            // A blank line is no event and has no number (as every reader of a journal counts).
            if (decoded.text.trim() === '') continue;
            line += 1;
            if (line > options.afterLine) yield decoded;
          }
          // Copied: the read buffer is used again.
          if (start < chunk.length) pending.push(Buffer.from(chunk.subarray(start)));
        }
      } finally {
        await handle.close();
      }
      continue;
    }
    if (!options.follow) return;
    // Read once more after the end is known: the last lines may have been written just before.
    if (options.ended?.()) {
      const last = await stat(file).then(
        (info) => info.size,
        () => 0,
      );
      if (last <= offset) return;
      continue;
    }
    await sleep(FOLLOW_POLL_MS, options.signal);
  }
}

/**
 * Why a byte offset is no place to resume `file`'s lines from (null: it is one): past the file's end, or not
 * just after a newline (inside a line). Reads one byte, whatever the journal's size.
 */
export async function offsetProblem(file: string, offset: number): Promise<string | null> {
  const size = await stat(file).then(
    (info) => info.size,
    () => 0,
  );
  if (offset > size) return `the position is past the end of the task's journal (${size} bytes)`;
  if (offset === 0) return null;
  const handle = await open(file, 'r');
  try {
    const byte = Buffer.alloc(1);
    await handle.read(byte, 0, 1, offset - 1);
    return byte[0] === 0x0a ? null : 'the position is not the end of a line of the journal';
  } finally {
    await handle.close();
  }
}
