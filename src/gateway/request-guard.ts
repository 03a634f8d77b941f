/**
 * The checks a request passes before the gateway forwards it, in order: rate, a foreign token, the target
 * (path, then method + route), the route's own token, the budget, the body size, the model. A request that
 * fails one is answered and recorded by {@link GatewayRefusals}; one that passes comes out with the allowed
 * route and its body, read within the size cap.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayRefusal } from '../core/events.js';
import { readBoundedBody } from './bounded-body.js';
import { jsonError, type GatewayRefusals } from './gateway-refusals.js';
import { matchRoute, modelRefusal, type GatewayRoute, type RateLimiter } from './request-policy.js';
import type { GatewayBudget } from './gateway-budget.js';

export interface RequestGuardOptions {
  route: GatewayRefusal['route'];
  prefix: string;
  routes: readonly GatewayRoute[];
  /** The token this route takes. */
  token: string;
  /** A token that is refused here outright (the worker's, on the Meta-agent's route). */
  foreignToken?: string;
  maxRequestBytes: number;
  refusals: GatewayRefusals;
  rate?: RateLimiter;
  requestsPerMinute?: number;
  budget?: Pick<GatewayBudget, 'refusal'>;
  /** Called with the reason when a request is refused for the budget. */
  onBudgetRefused?: (reason: string) => void;
  /** Models the body may name; undefined: any. */
  allowedModels?: readonly string[];
}

/**
 * The token a request carries: `Authorization: Bearer` (codex, the SDK), `x-api-key` (claude) or
 * `x-goog-api-key` (gemini). A request that carries two different ones is taken at none (no header wins).
 */
function carriedToken(request: IncomingMessage): string | undefined {
  const value = request.headers.authorization;
  const bearer = value?.startsWith('Bearer ') ? value.slice('Bearer '.length) : undefined;
  const header = (name: string) => {
    const carried = request.headers[name];
    return typeof carried === 'string' ? carried : undefined;
  };
  const carried = [bearer, header('x-api-key'), header('x-goog-api-key')].filter(
    (token): token is string => token !== undefined,
  );
  if (new Set(carried).size > 1) return undefined;
  return carried[0];
}

export class RequestGuard {
  constructor(private readonly options: RequestGuardOptions) {}

  /** The allowed route and the body, or null when the request was refused (and answered). */
  async admit(
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<{ route: GatewayRoute; body: Buffer } | null> {
    const { options } = this;
    const method = request.method ?? 'GET';
    const target = request.url ?? '/';
    const refuse = (reason: GatewayRefusal['reason'], detail: string) =>
      options.refusals.refuse(response, { route: options.route, method, path: target, reason, detail });
    // Every request counts, refused ones too: a flood is cut short before anything else.
    if (options.rate && !options.rate.take()) {
      response.setHeader('retry-after', String(options.rate.retryAfterSeconds()));
      refuse('rate_limit', `more than ${options.requestsPerMinute} requests in a minute`);
      return null;
    }
    const token = carriedToken(request);
    if (options.foreignToken !== undefined && token === options.foreignToken) {
      refuse('token', `this token is not accepted on the ${options.route} route`);
      return null;
    }
    const decision = matchRoute(method, target, options.prefix, options.routes);
    if ('refused' in decision) {
      refuse(decision.refused, decision.detail);
      return null;
    }
    if (token !== options.token) {
      jsonError(
        response,
        401,
        `agent-runner gateway: missing or wrong ${options.route} token`,
        'invalid_api_key',
      );
      return null;
    }
    const spent = options.budget?.refusal() ?? null;
    if (spent !== null) {
      options.onBudgetRefused?.(spent);
      refuse('budget', spent);
      return null;
    }
    const read = await readBoundedBody(request, options.maxRequestBytes);
    if ('tooLarge' in read) {
      // Not read to the end: the connection cannot carry another request.
      response.setHeader('connection', 'close');
      response.on('finish', () => request.socket.destroy());
      refuse('body_too_large', `more than ${options.maxRequestBytes} bytes (at least ${read.tooLarge} sent)`);
      return null;
    }
    const wrongModel =
      options.allowedModels === undefined ? null : modelRefusal(read.body, options.allowedModels);
    if (wrongModel !== null) {
      refuse('model', wrongModel);
      return null;
    }
    return { route: decision.allowed, body: read.body };
  }
}
