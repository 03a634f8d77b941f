/**
 * A task's journal line by line, from a given line on, then live as the runner appends: what the server's
 * event stream sends. The journal is append-only JSONL written by agent-runner (already redacted); a line is
 * sent only once complete (its newline written). Reading waits for the consumer: a client that does not
 * read stops the reading, so the server holds at most one chunk per client.
 */
import { open, stat } from 'node:fs/promises';

export interface JournalLine {
  /** 1-based line number: the SSE event id, so a client resumes with `Last-Event-ID`. */
  id: number;
  text: string;
  /**
   * Set when the line's bytes are not UTF-8 (agent-runner never writes such a line; another program did): `text`
   * shows each bad sequence as U+FFFD, so it is not the line as the file holds it.
   */
  notUtf8?: true;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** One line's bytes as text: decoded whole, so a character is never cut where a read of the file ended. */
function decodeLine(bytes: Buffer, id: number): JournalLine {
  try {
    return { id, text: strictUtf8.decode(bytes) };
  } catch {
    return { id, text: bytes.toString('utf8'), notUtf8: true };
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
 * The lines after `afterLine` (0: from the start). With `follow`, waits for more until `signal` aborts or
 * `ended()` says the task will write no more (then the last lines are read and it returns).
 */
export async function* journalLines(
  file: string,
  options: { afterLine: number; follow: boolean; signal: AbortSignal; ended?: () => boolean },
): AsyncGenerator<JournalLine> {
  let offset = 0;
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
            const decoded = decodeLine(bytes, line + 1);
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
