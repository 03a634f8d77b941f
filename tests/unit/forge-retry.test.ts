/**
 * Delivery's one retry rule for a forge call (GitHub's and GitLab's adapters both follow it): which answers are
 * retried, after how long, how many times, and which wait is too long to wait.
 */
import { describe, expect, it } from 'vitest';
import {
  askedWaitSeconds,
  MAX_RETRY_AFTER_SECONDS,
  RETRY_LATER_RETRIES,
  retryAfterSeconds,
  retryLater,
  type RetryDecision,
} from '../../src/deliver/forge-retry.js';

describe('retryLater', () => {
  it.each<[string, number, number | null, number, RetryDecision]>([
    ['a 429 that names its wait', 429, 2, 0, { action: 'retry', waitSeconds: 2 }],
    ['a 503 that names its wait', 503, 1, 0, { action: 'retry', waitSeconds: 1 }],
    ['a 502 without a wait: (n+1)² seconds', 502, null, 0, { action: 'retry', waitSeconds: 1 }],
    ['a 504 without a wait, after two retries', 504, null, 2, { action: 'retry', waitSeconds: 9 }],
    ['a wait of exactly the bound', 429, MAX_RETRY_AFTER_SECONDS, 0, { action: 'retry', waitSeconds: 120 }],
    ['a wait of zero', 429, 0, 1, { action: 'retry', waitSeconds: 0 }],
    ['a wait over the bound', 429, MAX_RETRY_AFTER_SECONDS + 1, 0, { action: 'fail', tooLong: 121 }],
    ["an hour's wait on a 503", 503, 3600, 0, { action: 'fail', tooLong: 3600 }],
    ['the retries spent', 429, 1, RETRY_LATER_RETRIES, { action: 'fail', tooLong: null }],
    ['a 401', 401, null, 0, { action: 'fail', tooLong: null }],
    ['a 403 that names a wait', 403, 30, 0, { action: 'fail', tooLong: null }],
    ['a 409', 409, null, 0, { action: 'fail', tooLong: null }],
    ['a 422', 422, null, 0, { action: 'fail', tooLong: null }],
  ])('%s', (_name, status, asked, retriesDone, decision) => {
    expect(retryLater(status, asked, retriesDone)).toEqual(decision);
  });

  it('retries a lasting 503 exactly RETRY_LATER_RETRIES times', () => {
    let retries = 0;
    while (retryLater(503, null, retries).action === 'retry') retries += 1;
    expect(retries).toBe(RETRY_LATER_RETRIES);
    expect(RETRY_LATER_RETRIES).toBe(3);
  });
});

describe('askedWaitSeconds', () => {
  const now = Date.parse('2026-01-05T11:00:00Z');
  const epoch = now / 1000;

  it.each<[string, Parameters<typeof askedWaitSeconds>[0], number | null]>([
    ['Retry-After in seconds', { retryAfter: '30' }, 30],
    ['Retry-After as an HTTP date', { retryAfter: 'Mon, 05 Jan 2026 11:00:05 GMT' }, 5],
    ['Retry-After wins over the reset', { retryAfter: '2', remaining: '0', reset: String(epoch + 60) }, 2],
    ['a spent quota: its reset', { remaining: '0', reset: String(epoch + 45) }, 45],
    ['a reset already past', { remaining: '0', reset: String(epoch - 10) }, 0],
    ['a quota not spent: no wait', { remaining: '12', reset: String(epoch + 45) }, null],
    ['an unreadable Retry-After and no quota', { retryAfter: 'soon' }, null],
    ['nothing', {}, null],
  ])('%s', (_name, headers, seconds) => {
    expect(askedWaitSeconds(headers, now)).toBe(seconds);
  });

  it('reads a Retry-After date in the past as no wait', () => {
    expect(retryAfterSeconds('Mon, 05 Jan 2026 10:59:00 GMT', now)).toBe(0);
  });
});
