/**
 * The task's workers behind one WorkerAdapter: each run goes to the worker the Meta-agent chose
 * (`WorkerRunRequest.workerType`), the default one when it named none.
 */
import type { WorkerAdapter, WorkerRunRequest, WorkerRunResult } from '../core/ports.js';
import { InternalError } from '../errors.js';

export class WorkerSet implements WorkerAdapter {
  readonly type: string;
  readonly types: readonly string[];

  /** `workers` in the config's order: the first is the default. */
  constructor(private readonly workers: readonly WorkerAdapter[]) {
    const first = workers[0];
    if (first === undefined) throw new InternalError('A task needs at least one worker.');
    this.type = first.type;
    this.types = workers.map((worker) => worker.type);
  }

  run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    const type = request.workerType ?? this.type;
    const worker = this.workers.find((candidate) => candidate.type === type);
    if (worker === undefined)
      throw new InternalError(
        `No worker of type ${type} is configured (configured: ${this.types.join(', ')}).`,
      );
    return worker.run(request);
  }
}
