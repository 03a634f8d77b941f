/**
 * The workers a gateway serves, and how it starts listening: helpers of model-gateway.ts.
 */
import type { Server, Socket } from 'node:net';
import type { GatewayBudget } from './gateway-budget.js';
import {
  WORKER_PREFIX,
  type GatewayLimits,
  type GatewayWorker,
  type ModelGatewayOptions,
} from './gateway-options.js';
import type { GatewayRefusals } from './gateway-refusals.js';
import { RequestGuard } from './request-guard.js';
import { WORKER_ROUTES, type RateLimiter } from './request-policy.js';

/** A worker and the guard of its prefix. */
export interface WorkerRoute {
  worker: GatewayWorker;
  guard: RequestGuard;
}

/**
 * One guard per worker, longest prefix first (a request goes to the first whose prefix it starts with). They
 * share one token, one rate (the sandbox's, whichever worker asks) and one budget.
 */
export function workerGuards(
  workers: readonly GatewayWorker[],
  shared: {
    token: string;
    limits: GatewayLimits;
    refusals: GatewayRefusals;
    rate: RateLimiter;
    budget?: Pick<GatewayBudget, 'refusal'>;
    onBudgetRefused: (reason: string) => void;
  },
): WorkerRoute[] {
  return [...workers]
    .sort((a, b) => b.prefix.length - a.prefix.length)
    .map((worker) => ({
      worker,
      guard: new RequestGuard({
        route: 'worker',
        prefix: worker.prefix,
        routes: worker.routes,
        token: shared.token,
        maxRequestBytes: shared.limits.maxRequestBytes,
        refusals: shared.refusals,
        rate: shared.rate,
        requestsPerMinute: shared.limits.requestsPerMinute,
        ...(shared.budget ? { budget: shared.budget } : {}),
        onBudgetRefused: shared.onBudgetRefused,
        ...(worker.allowedModels ? { allowedModels: worker.allowedModels } : {}),
      }),
    }));
}

/** Keeps `server` and each of its connections in the sets the gateway closes. */
export function trackSockets(server: Server, sockets: Set<Socket>, servers: Server[]): Server {
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  servers.push(server);
  return server;
}

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
