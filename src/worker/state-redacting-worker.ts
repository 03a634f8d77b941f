/**
 * Keeps keys out of the worker's own state on disk: after each run, the files of the task's CODEX_HOME
 * (codex's session rollouts record every command's output) are redacted in place.
 */
import type { WorkerAdapter, WorkerRunRequest, WorkerRunResult } from '../core/ports.js';
import { redactFilesIn, type Redactor } from '../notes/redact.js';

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
      await redactFilesIn(this.stateDir, this.redact);
    }
  }
}
