/**
 * A forge call that failed, as an error an adapter throws: it carries the {@link ForgeFailure} delivery reports
 * (its kind, the forge's status and message, the permission a 403 names).
 */
import type { ForgeFailure } from './forge-port.js';

export class ForgeError extends Error {
  constructor(readonly failure: ForgeFailure) {
    super(failure.message);
    this.name = 'ForgeError';
  }
}

/** The kind of a forge's HTTP status (after the client's own retries). */
export function failureKindOf(status: number | null): ForgeFailure['kind'] {
  if (status === null) return 'unreachable';
  if (status === 401) return 'auth';
  if (status === 403) return 'permission';
  if (status === 409 || status === 422) return 'exists';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  return 'invalid';
}

/**
 * The longest wait a forge may ask for (`retry-after`, a rate limit's reset) that delivery waits out; a longer
 * one ends the call at once as `rate_limited`, the wait named in the message, instead of holding a run or a
 * CI job for an hour.
 */
export const MAX_RETRY_AFTER_SECONDS = 120;

/** Retries of a call the forge asked to retry later (429, 5xx), after the first attempt. */
export const RETRY_LATER_RETRIES = 3;

/** Seconds a `retry-after` header asks for (delta seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterSeconds(value: string | null | undefined, now: number = Date.now()): number | null {
  const text = value?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}
