/**
 * The workers a gateway serves, and how it starts listening: helpers of model-gateway.ts.
 */
import type { Server } from 'node:http';
import { WORKER_PREFIX, type GatewayWorker, type ModelGatewayOptions } from './gateway-options.js';
import { WORKER_ROUTES } from './request-policy.js';

export function listen(server: Server, target: string | { port: number; host: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = (): void => {
      server.off('error', reject);
      resolve();
    };
    if (typeof target === 'string') server.listen(target, done);
    else server.listen(target.port, target.host, done);
  });
}

/**
 * The workers of a gateway: `options.workers`, or the one codex worker at `/v1` that `worker`,
 * `workerRoutes` and `allowedModels` describe (none of them given: a worker with no upstream and no route).
 */
export function gatewayWorkers(options: ModelGatewayOptions): readonly GatewayWorker[] {
  if (options.workers !== undefined && options.workers.length > 0) return options.workers;
  return [
    {
      type: 'codex',
      prefix: WORKER_PREFIX,
      protocol: 'responses',
      keyHeader: 'authorization',
      upstream: options.worker ?? { baseUrl: 'http://127.0.0.1:9', apiKey: undefined },
      routes: options.workerRoutes ?? WORKER_ROUTES.codex ?? [],
      ...(options.allowedModels ? { allowedModels: options.allowedModels } : {}),
    },
  ];
}
