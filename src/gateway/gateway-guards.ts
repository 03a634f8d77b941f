/**
 * Decorators that join the gateway to the loop: the worker's usage is the gateway's exact count for the run
 * (every request it forwarded, retries included), a run whose model requests were refused for the budget
 * says so (the runner then ends the task NEEDS_REVIEW), and a replay that diverged from its cassette surfaces as the divergence itself rather
 * than as the HTTP 400 the worker or the SDK saw.
 */
import type { WorkerAdapter, WorkerRunRequest, WorkerRunResult } from '../core/ports.js';
import type { MetaCompletion, MetaCompletionOptions, MetaMessage, MetaModel } from '../meta/meta-model.js';
import type { ModelGateway } from './model-gateway.js';

export class GatewayMeteredWorker implements WorkerAdapter {
  constructor(
    private readonly inner: WorkerAdapter,
    private readonly gateway: Pick<ModelGateway, 'takeWorkerUsage' | 'takeDivergence' | 'takeBudgetRefusal'>,
  ) {}

  get type(): string {
    return this.inner.type;
  }

  async run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    this.gateway.takeWorkerUsage();
    this.gateway.takeBudgetRefusal();
    const result = await this.inner.run(request);
    const divergence = this.gateway.takeDivergence();
    if (divergence) throw divergence;
    const budgetExhausted = this.gateway.takeBudgetRefusal();
    return {
      ...result,
      usage: this.gateway.takeWorkerUsage(),
      ...(budgetExhausted !== null ? { budgetExhausted } : {}),
    };
  }
}

export class GatewayCheckedMetaModel implements MetaModel {
  constructor(
    private readonly inner: MetaModel,
    private readonly gateway: Pick<ModelGateway, 'takeDivergence'>,
  ) {}

  get model(): string {
    return this.inner.model;
  }

  async complete(messages: readonly MetaMessage[], options?: MetaCompletionOptions): Promise<MetaCompletion> {
    try {
      return await this.inner.complete(messages, options);
    } catch (error) {
      throw this.gateway.takeDivergence() ?? error;
    }
  }
}
