/**
 * Keeps keys out of the worker's own state on disk: after each run, the files of the task's worker home
 * (codex's session rollouts, claude's transcripts, gemini's and qwen's chats record every command's output;
 * opencode's SQLite database and its write-ahead log too) are redacted in place. A text file gets
 * `[REDACTED]`; a binary file (one with a NUL byte) gets a mask of the secret's own length, so nothing after it
 * moves and a database stays a database; a SQLite write-ahead log also gets the checksums of its changed
 * frames recomputed (else SQLite drops them, and the session its latest messages). The worker home is writable by
 * the worker, so the pass goes through rewriteWorkerFiles: it never follows a symlink, never opens a special
 * file, never writes a hardlinked file, and is not led out of the directory by a swap.
 */
import type { WorkerAdapter, WorkerRunRequest, WorkerRunResult } from '../core/ports.js';
import type { Redaction } from '../notes/redact.js';
import { rewriteWorkerFiles } from '../sandbox/worker-files.js';
import { isSqliteWal, resealWal } from './sqlite-wal.js';

export class StateRedactingWorker implements WorkerAdapter {
  constructor(
    private readonly inner: WorkerAdapter,
    private readonly stateDir: string,
    private readonly redaction: Pick<Redaction, 'redact' | 'mask'>,
  ) {}

  get type(): string {
    return this.inner.type;
  }

  /** One state file's text (latin1: one character per byte). */
  private redactState(text: string): string {
    if (!text.includes('\0')) return this.redaction.redact(text);
    const masked = this.redaction.mask(text);
    if (masked === text) return text;
    const original = Buffer.from(text, 'latin1');
    return isSqliteWal(original)
      ? resealWal(original, Buffer.from(masked, 'latin1')).toString('latin1')
      : masked;
  }

  async run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    try {
      return await this.inner.run(request);
    } finally {
      await rewriteWorkerFiles(this.stateDir, (text) => this.redactState(text));
    }
  }
}
