/**
 * The one rule both forge adapters (GitHub, GitLab) follow for a call the forge asks to retry later: a 429 or a
 * 5xx is retried after the wait the forge names (`retry-after`, else an exhausted quota's reset), a bounded
 * number of times; a wait longer than delivery waits is not waited, and the call fails at once naming it. Pure:
 * each adapter reads its forge's headers into {@link ForgeWaitHeaders} and carries the decision out with its
 * own client.
 */

/**
 * The longest wait a forge may ask for (`retry-after`, a rate limit's reset) that delivery waits out; a longer
 * one ends the call at once as `rate_limited`, the wait named in the message, instead of holding a run or a
 * CI job for an hour.
 */
export const MAX_RETRY_AFTER_SECONDS = 120;

/** Retries of a call the forge asked to retry later (429, 5xx), after the first attempt. */
export const RETRY_LATER_RETRIES = 3;

/**
 * What a forge's answer says about waiting, as header values: `retry-after` (delta seconds or an HTTP date),
 * and its rate limit's remaining calls and reset in Unix seconds (GitHub's `x-ratelimit-remaining` and
 * `x-ratelimit-reset`, GitLab's `RateLimit-Remaining` and `RateLimit-Reset`).
 */
export interface ForgeWaitHeaders {
  retryAfter?: string | null | undefined;
  remaining?: string | null | undefined;
  reset?: string | null | undefined;
}

/** What to do with a failed call: retry after `waitSeconds`, or fail (`tooLong`: the wait asked, when that was why). */
export type RetryDecision =
  { action: 'retry'; waitSeconds: number } | { action: 'fail'; tooLong: number | null };

/** Seconds a `retry-after` header asks for (delta seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterSeconds(value: string | null | undefined, now: number = Date.now()): number | null {
  const text = value?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}

/** Seconds the forge asked to wait: `retry-after`, else an exhausted quota's reset; null when it named none. */
export function askedWaitSeconds(headers: ForgeWaitHeaders, now: number = Date.now()): number | null {
  const after = retryAfterSeconds(headers.retryAfter, now);
  if (after !== null) return after;
  const reset = Number(headers.reset);
  return headers.remaining?.trim() === '0' && reset > 0 ? Math.max(0, Math.ceil(reset - now / 1000)) : null;
}

/**
 * Whether a call that failed with `status` is tried again, after `retriesDone` retries, when the forge asked to
 * wait `askedSeconds` (null: it named no wait, so (n+1)² seconds, the back-off of Octokit's retry plugin).
 */
export function retryLater(status: number, askedSeconds: number | null, retriesDone: number): RetryDecision {
  if (!(status === 429 || status >= 500)) return { action: 'fail', tooLong: null };
  if (askedSeconds !== null && askedSeconds > MAX_RETRY_AFTER_SECONDS)
    return { action: 'fail', tooLong: askedSeconds };
  if (retriesDone >= RETRY_LATER_RETRIES) return { action: 'fail', tooLong: null };
  return { action: 'retry', waitSeconds: askedSeconds ?? (retriesDone + 1) ** 2 };
}
