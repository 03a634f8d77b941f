/**
 * The requester the GitLab adapter gives `@gitbeaker/rest` (its `requesterFn` option, built with
 * `createRequesterFn` of `@gitbeaker/requester-utils` as gitbeaker's own is). It sends a request as gitbeaker's
 * default does (the URL from `prefixUrl` and `searchParams`, the client-side rate limiter, the `agent`, the
 * query timeout's signal, the body read by content type) with one difference: a call GitLab asks to retry
 * later follows delivery's one rule ({@link retryLater}). gitbeaker's default retries 429 and 502 ten times
 * within a quarter of a second in all, whatever `Retry-After` says; here a 429 or a 5xx waits as long as GitLab's
 * `Retry-After` (else its spent quota's `RateLimit-Reset`, else (n+1)² seconds), a few times, and a wait over
 * `MAX_RETRY_AFTER_SECONDS` (120 s) is not waited. The last answer is thrown as gitbeaker throws any failed
 * request (a `GitbeakerRequestError` whose `cause.response` is that answer), so the adapter reads its status
 * and headers.
 */
import type { Agent } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createRequesterFn,
  getMatchingRateLimiter,
  GitbeakerRequestError,
  GitbeakerTimeoutError,
  type FormattedResponse,
  type RateLimiters,
  type RequesterType,
  type ResourceOptions,
  type ResponseBodyTypes,
} from '@gitbeaker/requester-utils';
import { askedWaitSeconds, retryLater, type ForgeWaitHeaders } from './forge-retry.js';

export interface GitLabRequesterOptions {
  /** Milliseconds per second of a wait GitLab asks for (tests make it small); default 1000. */
  retryAfterBaseValue?: number;
}

/** What `createRequesterFn` hands the request handler: gitbeaker's request options and its rate limiters. */
interface HandlerOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | FormData;
  searchParams?: string;
  prefixUrl?: string;
  asStream?: boolean;
  signal?: AbortSignal;
  agent?: Agent;
  rateLimiters?: RateLimiters;
}

/** GitLab's answer's headers about waiting, in the shared rule's words. */
export function gitLabWaitHeaders(headers: Headers): ForgeWaitHeaders {
  return {
    retryAfter: headers.get('retry-after'),
    remaining: headers.get('ratelimit-remaining'),
    reset: headers.get('ratelimit-reset'),
  };
}

/** The `requesterFn` for `new Gitlab({...})`. */
export function gitLabRequester(
  options: GitLabRequesterOptions = {},
): (resourceOptions: ResourceOptions) => RequesterType {
  const base = options.retryAfterBaseValue ?? 1000;
  return createRequesterFn(
    (_, requestOptions) => Promise.resolve(requestOptions),
    (endpoint, handlerOptions) => send(endpoint, (handlerOptions ?? {}) as HandlerOptions, base),
  );
}

/** A timeout or an abort of the query timeout's signal, as gitbeaker reports it. */
function timedOut(error: unknown): never {
  const name = (error as { name?: string }).name;
  if (name === 'TimeoutError' || name === 'AbortError')
    throw new GitbeakerTimeoutError('Query timeout was reached');
  throw error;
}

async function send(endpoint: string, options: HandlerOptions, base: number): Promise<FormattedResponse> {
  const { rateLimiters, agent, asStream = false, prefixUrl, searchParams, method, signal, ...init } = options;
  const rateLimit = getMatchingRateLimiter(endpoint, rateLimiters, method);
  const url = new URL(endpoint, prefixUrl && !prefixUrl.endsWith('/') ? `${prefixUrl}/` : prefixUrl);
  url.search = searchParams ?? '';
  for (let retries = 0; ; retries += 1) {
    const request = new Request(url, { ...init, method, signal: signal ?? null });
    await rateLimit();
    // gitbeaker types `agent` as node's Agent and hands it to fetch as its dispatcher; so does this.
    const dispatcher = agent ? ({ dispatcher: agent } as unknown as RequestInit) : undefined;
    const response = await fetch(request, dispatcher).catch(timedOut);
    if (response.ok) return parseResponse(response, asStream);
    const decision = retryLater(
      response.status,
      askedWaitSeconds(gitLabWaitHeaders(response.headers)),
      retries,
    );
    if (decision.action === 'fail') return throwFailed(request, response);
    await response.body?.cancel();
    await sleep(decision.waitSeconds * base, undefined, signal ? { signal } : {}).catch(timedOut);
  }
}

async function parseResponse(response: Response, asStream: boolean): Promise<FormattedResponse> {
  const { status } = response;
  const headers = Object.fromEntries(response.headers.entries());
  if (asStream) return { body: response.body as unknown as ResponseBodyTypes, headers, status };
  if (status === 204) return { body: null, headers, status };
  const type = (response.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
  const body: ResponseBodyTypes =
    type === 'application/json'
      ? (((await response.json()) as ResponseBodyTypes) ?? {})
      : type.startsWith('text/')
        ? await response.text()
        : ((await response.blob()) as unknown as ResponseBodyTypes);
  return { body, headers, status };
}

/** Throws a failed answer as gitbeaker does: the JSON body's `error` or `message`, else the text. */
async function throwFailed(request: Request, response: Response): Promise<never> {
  const content = await response.text();
  let description = content.trim();
  if (response.headers.get('content-type')?.includes('application/json')) {
    try {
      const output = JSON.parse(content) as { error?: unknown; message?: unknown } | null;
      const said = output?.error || output?.message || '';
      description = typeof said === 'string' ? said : JSON.stringify(said);
    } catch {
      // Not the JSON it claims to be: its text is the description.
    }
  }
  throw new GitbeakerRequestError(description, { cause: { description, request, response } });
}
