/**
 * What the gateway lets through on a model route: exactly the method + path pairs a worker needs, with the
 * request target compared as sent (no decoding, no normalising that a traversal could slip through), the
 * model pinned, and a per-task request rate. Pure functions and a small clock-driven limiter; the gateway
 * applies them and turns a refusal into an HTTP answer and an event.
 */
import type { GatewayRefusalReason } from '../core/events.js';
import { WORKER_KINDS, WORKER_TYPES } from '../worker/worker-kinds.js';

/**
 * One allowed request: `path` is below the route's prefix (`/responses` under `/v1`), its query string
 * included when the worker sends one (`/v1/messages?beta=true`): the whole target is compared as sent.
 */
export interface GatewayRoute {
  method: string;
  path: string;
}

/** What each worker needs from its model in its default protocol, for routes that name no model. */
export const WORKER_ROUTES: Readonly<Record<string, readonly GatewayRoute[]>> = Object.fromEntries(
  WORKER_TYPES.map((type) => [type, WORKER_KINDS[type].routes([], WORKER_KINDS[type].protocols[0])]),
);

/** The Meta-agent's own calls (Chat Completions), on the host's loopback route. */
export const META_ROUTES: readonly GatewayRoute[] = [{ method: 'POST', path: '/chat/completions' }];

export type RouteDecision =
  { allowed: GatewayRoute } | { refused: Extract<GatewayRefusalReason, 'path' | 'route'>; detail: string };

/**
 * Matches a request target (as sent: `/v1/responses`) against `routes` under `prefix`. Anything that is not
 * literally an allowed path is refused: `..` and `.` segments, empty segments, backslashes and every
 * percent-escape (`%2e%2e`, `%2f`, double encoding) are refused before matching, so no decoding step
 * elsewhere (ours, a proxy's, the upstream's) can turn an allowed-looking target into another one. A query
 * string is allowed only as part of a route's own path, character for character.
 */
export function matchRoute(
  method: string,
  target: string,
  prefix: string,
  routes: readonly GatewayRoute[],
): RouteDecision {
  if (/[\\%]/.test(target) || /[^\x21-\x7e]/.test(target)) {
    return { refused: 'path', detail: 'escaped, backslash or non-printable characters in the path' };
  }
  const [pathname, query] = splitTarget(target);
  const segments = pathname.split('/').slice(1);
  if (!pathname.startsWith('/') || segments.some((segment) => ['', '.', '..'].includes(segment))) {
    return { refused: 'path', detail: 'a "..", "." or empty path segment' };
  }
  const route = routes.find(
    (candidate) => candidate.method === method && `${prefix}${candidate.path}` === target,
  );
  if (route === undefined)
    return {
      refused: 'route',
      detail: query === undefined ? 'not a route the worker needs' : 'a query string the route does not take',
    };
  return { allowed: route };
}

function splitTarget(target: string): [string, string | undefined] {
  const index = target.indexOf('?');
  return index === -1 ? [target, undefined] : [target.slice(0, index), target.slice(index + 1)];
}

/**
 * The `model` of a JSON request body, checked against `allowed`. Returns null when allowed, else why not
 * (a body that is not a JSON object with a string `model` is refused too).
 */
export function modelRefusal(body: Buffer, allowed: readonly string[]): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return 'the body is not JSON';
  }
  const model =
    parsed !== null && typeof parsed === 'object' ? (parsed as { model?: unknown }).model : undefined;
  if (typeof model !== 'string') return 'the body names no model';
  if (!allowed.includes(model)) return `model "${model.slice(0, 80)}" is not ${allowed.join(' or ')}`;
  return null;
}

/** At most `limit` requests in any `windowMs` (a sliding window over the times of accepted requests). */
export class RateLimiter {
  private readonly times: number[] = [];

  constructor(
    private readonly limit: number,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts a request and says whether it is within the limit; a refused request is not counted. */
  take(): boolean {
    const now = this.now();
    while (this.times.length > 0 && (this.times[0] as number) <= now - this.windowMs) this.times.shift();
    if (this.times.length >= this.limit) return false;
    this.times.push(now);
    return true;
  }

  /** Seconds until the next request would be accepted (for Retry-After). */
  retryAfterSeconds(): number {
    const oldest = this.times[0];
    if (oldest === undefined) return 0;
    return Math.max(1, Math.ceil((oldest + this.windowMs - this.now()) / 1000));
  }
}
