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
  let pending = '';
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
          pending += buffer.subarray(0, bytesRead).toString('utf8');
          let newline = pending.indexOf('\n');
          while (newline !== -1) {
            const text = pending.slice(0, newline);
            pending = pending.slice(newline + 1);
            newline = pending.indexOf('\n');
            if (text.trim() === '') continue;
            line += 1;
            if (line > options.afterLine) yield { id: line, text };
          }
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
