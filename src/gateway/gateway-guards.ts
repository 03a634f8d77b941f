/**
 * Decorators that join the gateway to the loop: the worker's usage is the gateway's exact count for the run
 * (every request it forwarded, retries included), a run whose model requests were refused for the budget
 * says so (the runner then ends the task NEEDS_REVIEW), and a replay that diverged from its cassette surfaces as the divergence itself rather
 * than as the HTTP 400 the worker or the SDK saw.
 */
import type { WorkerAdapter, WorkerRunRequest, WorkerRunResult } from '../core/ports.js';
import type { MetaCompletion, MetaCompletionOptions, MetaMessage, MetaModel } from '../meta/meta-model.js';
import { ModelBehaviorError } from '../errors.js';
import type { WorkerAnswer } from './model-exchange.js';
import type { ModelGateway } from './model-gateway.js';

/**
 * A failed run whose last model answer was an HTTP error the worker cannot get past (the key refused, the
 * model unknown, the quota or rate spent, the provider down): one message naming the worker and the fix.
 */
export function providerFailure(answer: WorkerAnswer): ModelBehaviorError | null {
  const { status } = answer;
  const block = `workers.${answer.worker}`;
  let fix: string;
  if (status === 401 || status === 403)
    fix = `it refused the key: check ${answer.apiKeyEnv ?? `${block}.apiKeyEnv`} (${block}.apiKeyEnv names the variable)`;
  else if (status === 404) fix = `check ${block}.model (${answer.model ?? 'unset'}) and ${block}.baseUrl`;
  else if (status === 429) fix = 'it is rate-limited or out of quota: try again later, or raise the quota';
  else if (status >= 500) fix = 'the provider failed: try again later';
  else return null;
  const detail = answer.detail.replace(/\s+/g, ' ').trim().slice(0, 300);
  return new ModelBehaviorError(
    'model_http_error',
    `The ${answer.worker} worker's model at ${answer.upstream} answered HTTP ${status}; ${fix}.` +
      (detail ? ` Its answer: ${detail}` : ''),
    { details: { worker: answer.worker, status }, retryable: status === 429 || status >= 500 },
  );
}

export class GatewayMeteredWorker implements WorkerAdapter {
  constructor(
    private readonly inner: WorkerAdapter,
    private readonly gateway: Pick<
      ModelGateway,
      'takeWorkerUsage' | 'takeDivergence' | 'takeBudgetRefusal' | 'takeWorkerAnswer'
    >,
  ) {}

  get type(): string {
    return this.inner.type;
  }

  async run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    this.gateway.takeWorkerUsage();
    this.gateway.takeBudgetRefusal();
    this.gateway.takeWorkerAnswer();
    const result = await this.inner.run(request);
    const divergence = this.gateway.takeDivergence();
    if (divergence) throw divergence;
    // The run failed on its model's answer: no further run of this worker can do better.
    const answer = this.gateway.takeWorkerAnswer();
    const failure = result.failed && answer !== null ? providerFailure(answer) : null;
    const budgetExhausted = this.gateway.takeBudgetRefusal();
    return {
      ...result,
      usage: this.gateway.takeWorkerUsage(),
      ...(budgetExhausted !== null ? { budgetExhausted } : {}),
      ...(failure !== null ? { providerFailure: failure } : {}),
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
