/**
 * Bounded views of a process's output: the last bytes of a stream (for results and notes), the one text tail
 * of a finished command's stdout and stderr, and a line splitter (for live callbacks). All keep memory bounded
 * whatever the output size.
 */
import { StringDecoder } from 'node:string_decoder';
import { stripTerminalSequences } from '../notes/terminal-text.js';

/** Keeps the last `limitBytes` bytes written to it. */
export class OutputTail {
  private chunks: Buffer[] = [];
  private length = 0;

  constructor(private readonly limitBytes: number) {}

  write(chunk: Buffer): void {
    if (this.limitBytes <= 0 || chunk.length === 0) return;
    // A chunk larger than the limit replaces everything: copy its end so the big buffer can be freed.
    if (chunk.length >= this.limitBytes) {
      this.chunks = [Buffer.from(chunk.subarray(chunk.length - this.limitBytes))];
      this.length = this.limitBytes;
      return;
    }
    this.chunks.push(Buffer.from(chunk));
    this.length += chunk.length;
    while (this.length > this.limitBytes) {
      const first = this.chunks[0];
      if (first === undefined) break;
      const excess = this.length - this.limitBytes;
      if (first.length <= excess) {
        this.chunks.shift();
        this.length -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.length -= excess;
      }
    }
  }

  /** Bytes currently held (at most the limit). */
  get byteLength(): number {
    return this.length;
  }

  /** The tail as UTF-8; a character cut in half at the start is dropped rather than shown as garbage. */
  toString(): string {
    return Buffer.concat(this.chunks, this.length)
      .toString('utf8')
      .replace(/^\uFFFD+/, '');
  }
}

/**
 * The output tail of a finished command (a DoD or criteria check, a set-up command) recorded for the journal,
 * the note, the Meta-agent and `--json`: stdout, then stderr under a `--- stderr ---` line, the last `limit`
 * characters, without terminal sequences (a runner's colours are noise off its terminal, and would cost the
 * Meta-agent tokens). The one place a command's output is made readable; other controls are still shown as
 * escapes wherever it is shown.
 */
export function tailOf(rawStdout: string, rawStderr: string, limit: number): string {
  const stdout = stripTerminalSequences(rawStdout);
  const stderr = stripTerminalSequences(rawStderr);
  const combined =
    stderr.trim().length > 0 ? `${stdout.trimEnd()}\n--- stderr ---\n${stderr.trimEnd()}` : stdout.trimEnd();
  return combined.length > limit ? `…${combined.slice(combined.length - limit)}` : combined;
}

/** Longest line delivered whole (in UTF-16 units); a longer one comes in pieces of this size, so memory stays bounded. */
export const MAX_LINE_LENGTH = 1024 * 1024;

/** Splits a byte stream into UTF-8 lines (without `\n` or a trailing `\r`) and hands each to `onLine`. */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLineLength: number = MAX_LINE_LENGTH,
  ) {}

  write(chunk: Buffer): void {
    const text = this.pending + this.decoder.write(chunk);
    let start = 0;
    for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n', start)) {
      this.emit(text.slice(start, newline));
      start = newline + 1;
    }
    this.pending = text.slice(start);
    if (this.pending.length >= this.maxLineLength) {
      const whole = this.pending.length - (this.pending.length % this.maxLineLength);
      this.emit(this.pending.slice(0, whole), false);
      this.pending = this.pending.slice(whole);
    }
  }

  /** Delivers the last line when the output did not end with a newline. */
  end(): void {
    const rest = this.pending + this.decoder.end();
    this.pending = '';
    if (rest.length > 0) this.emit(rest);
  }

  /** `complete`: the line ended with a newline (or the stream ended), so a trailing `\r` is its CRLF. */
  private emit(line: string, complete = true): void {
    const text = complete && line.endsWith('\r') ? line.slice(0, -1) : line;
    for (let start = 0; start < text.length || start === 0; start += this.maxLineLength) {
      this.onLine(text.slice(start, start + this.maxLineLength));
    }
  }
}
