/**
 * Keeps keys out of the worker's own state on disk: after each run, the files of the task's CODEX_HOME
 * (codex's session rollouts record every command's output) are redacted in place. CODEX_HOME is writable by
 * the worker, so the pass goes through rewriteWorkerFiles: it never follows a symlink, never opens a special
 * file, never writes a hardlinked file, and is not led out of the directory by a swap.
 */
import type { WorkerAdapter, WorkerRunRequest, WorkerRunResult } from '../core/ports.js';
import type { Redactor } from '../notes/redact.js';
import { rewriteWorkerFiles } from '../sandbox/worker-files.js';

export class StateRedactingWorker implements WorkerAdapter {
  constructor(
    private readonly inner: WorkerAdapter,
    private readonly stateDir: string,
    private readonly redact: Redactor,
  ) {}

  get type(): string {
    return this.inner.type;
  }

  async run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    try {
      return await this.inner.run(request);
    } finally {
      await rewriteWorkerFiles(this.stateDir, this.redact);
    }
  }
}
