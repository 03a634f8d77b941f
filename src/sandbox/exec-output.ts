/**
 * Where an exec's output goes: a file (everything), a bounded tail (memory) and a line callback. The Docker
 * stream is demultiplexed here with backpressure, so a process that writes faster than the disk does not make
 * the runner buffer its output.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { once } from 'node:events';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { EnvironmentError } from '../errors.js';
import { LineSplitter, OutputTail } from './output-tail.js';

export interface OutputSinkOptions {
  filePath?: string;
  onLine?: (line: string) => void;
  tailBytes: number;
  /** Applied to whole lines before they reach the file (keys and secrets out of the logs). */
  redact?: (text: string) => string;
  /** The file is cut at this many bytes, with a line that says so (default {@link DEFAULT_MAX_FILE_BYTES}). */
  maxFileBytes?: number;
}

/**
 * The most one stream of one exec writes to its log file: a worker that floods its own output (seen: 356 MiB
 * in 41 s) fills the log up to here, then the rest is counted, not kept (the tail and the line callback still
 * see everything).
 */
export const DEFAULT_MAX_FILE_BYTES = 64 * 1024 ** 2;

/** Above this, a line without a newline is written (redacted) anyway, so memory stays bounded. */
const MAX_PENDING_CHARS = 1024 * 1024;

/** One stream's destinations (stdout or stderr). */
export class OutputSink {
  readonly tail: OutputTail;
  private readonly lines: LineSplitter | null;
  private file: WriteStream | null = null;
  private fileError: Error | null = null;
  private callbackError: unknown = null;
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private fileBytes = 0;
  private cutBytes = 0;

  private constructor(private readonly options: OutputSinkOptions) {
    this.tail = new OutputTail(options.tailBytes);
    const onLine = options.onLine;
    this.lines = onLine
      ? new LineSplitter((line) => {
          if (this.callbackError !== null) return;
          // A throwing callback must not tear down the pump mid-stream (the process would be left running);
          // the error is rethrown once the process has finished.
          try {
            onLine(line);
          } catch (error) {
            this.callbackError = error;
          }
        })
      : null;
  }

  /** Opens the file (creating its parent directories) before any output arrives. */
  static async open(options: OutputSinkOptions): Promise<OutputSink> {
    const sink = new OutputSink(options);
    if (options.filePath !== undefined) {
      await mkdir(path.dirname(options.filePath), { recursive: true });
      const file = createWriteStream(options.filePath, { flags: 'w' });
      file.on('error', (error) => {
        sink.fileError ??= error;
      });
      await once(file, 'open');
      sink.file = file;
    }
    return sink;
  }

  /** Resolves when the chunk may be followed by another (the file accepted it or drained). */
  async write(chunk: Buffer): Promise<void> {
    this.tail.write(chunk);
    this.lines?.write(chunk);
    if (this.file === null || this.fileError !== null) return;
    const bytes = this.capped(this.forFile(chunk));
    if (bytes.length > 0 && !this.file.write(bytes)) {
      // once() rejects on 'error' too, so a failing file cannot leave the pump waiting for a drain.
      await once(this.file, 'drain').catch(() => undefined);
    }
  }

  /** What of `data` still fits under the file's cap; the rest is only counted. */
  private capped(data: Buffer | string): Buffer {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    const room = Math.max(0, (this.options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES) - this.fileBytes);
    const kept = bytes.subarray(0, room);
    this.fileBytes += kept.length;
    this.cutBytes += bytes.length - kept.length;
    return kept;
  }

  /** The bytes for the file: as they came, or whole lines redacted (a secret split across chunks is caught). */
  private forFile(chunk: Buffer): Buffer | string {
    const redact = this.options.redact;
    if (!redact) return chunk;
    const text = this.pending + this.decoder.write(chunk);
    const cut = text.length > MAX_PENDING_CHARS ? text.length : text.lastIndexOf('\n') + 1;
    this.pending = text.slice(cut);
    return redact(text.slice(0, cut));
  }

  /** Flushes the last line and closes the file; throws what went wrong with the file or a callback. */
  async close(): Promise<void> {
    this.lines?.end();
    const file = this.file;
    if (file !== null && this.options.redact && this.fileError === null) {
      const rest = this.pending + this.decoder.end();
      this.pending = '';
      if (rest) file.write(this.capped(this.options.redact(rest)));
    }
    if (file !== null && this.cutBytes > 0 && this.fileError === null)
      file.write(
        `\n[agent-runner: this log was cut at ${this.fileBytes} bytes; ${this.cutBytes} more bytes were not kept]\n`,
      );
    if (file !== null) {
      this.file = null;
      if (!file.destroyed) await new Promise<void>((resolve) => file.end(resolve));
    }
    if (this.fileError !== null) {
      const error = this.fileError as NodeJS.ErrnoException;
      throw new EnvironmentError(
        error.code === 'ENOSPC' ? 'disk_full' : 'sandbox_failed',
        `Could not write the process output to ${this.options.filePath} (${error.message}). ` +
          'Free disk space or fix the permissions of the run directory.',
        { cause: error },
      );
    }
    if (this.callbackError !== null) throw this.callbackError;
  }
}

const HEADER_BYTES = 8;

/**
 * Reads Docker's multiplexed exec stream (8-byte header: stream type, 3 zero bytes, big-endian length) and
 * writes each payload to its sink. Payloads are written as they arrive, never reassembled, so memory stays at
 * a socket buffer or two. Resolves when the stream ends.
 */
export async function pumpDockerStream(
  source: Readable,
  stdout: OutputSink,
  stderr: OutputSink,
): Promise<void> {
  let header = Buffer.alloc(0);
  let remaining = 0;
  let target: OutputSink = stdout;
  for await (const data of source as AsyncIterable<Buffer>) {
    let chunk: Buffer = data;
    while (chunk.length > 0) {
      if (remaining > 0) {
        const payload = chunk.subarray(0, remaining);
        chunk = chunk.subarray(payload.length);
        remaining -= payload.length;
        await target.write(payload);
        continue;
      }
      const needed = HEADER_BYTES - header.length;
      header = Buffer.concat([header, chunk.subarray(0, needed)]);
      chunk = chunk.subarray(Math.min(needed, chunk.length));
      if (header.length < HEADER_BYTES) break;
      // 1 = stdout, 2 = stderr (0 would be stdin, never attached).
      target = header.readUInt8(0) === 2 ? stderr : stdout;
      remaining = header.readUInt32BE(4);
      header = Buffer.alloc(0);
    }
  }
}
