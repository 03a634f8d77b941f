/**
 * Where a read of a request's review starts: the first read takes every comment; a later one starts at the
 * newest comment the last read saw and leaves out the ids it handled at that time; reads of another request
 * do not move it. A record from elsewhere (the task's state on the remote) is parsed strictly and refused whole
 * when anything in it is not what agent-runner writes; two records merge as the union of their reads.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Redaction } from '../../src/notes/redact.js';
import {
  appendReviewRead,
  cursorOf,
  mergeReviewRecords,
  parseReviewRecord,
  reviewCursor,
  SINCE_THE_START,
} from '../../src/review/review-record.js';

describe('review read cursor', () => {
  it('starts at the beginning, then at the newest comment read, without the ids read then', () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'review-record-'));
    onTestFinished(() => rmSync(runDir, { recursive: true, force: true }));
    const url = 'https://github.test/acme/app/pull/1';
    expect(reviewCursor(runDir, url)).toEqual({ since: SINCE_THE_START, handled: new Set() });
    const redact = new Redaction(['secret-token-value-123']).redact;
    appendReviewRead(runDir, { url, until: '2026-01-02T10:05:00Z', handled: ['7', '8'] }, redact);
    appendReviewRead(
      runDir,
      { url: 'https://github.test/acme/app/pull/2', until: '2026-02-01T00:00:00Z', handled: ['9'] },
      redact,
    );
    expect(reviewCursor(runDir, url)).toEqual({
      since: '2026-01-02T10:05:00Z',
      handled: new Set(['7', '8']),
    });
    appendReviewRead(runDir, { url, until: '2026-01-02T10:05:00Z', handled: ['10'] }, redact);
    expect(reviewCursor(runDir, url).handled).toEqual(new Set(['7', '8', '10']));
    appendReviewRead(
      runDir,
      { url, until: '2026-01-03T00:00:00Z', handled: ['secret-token-value-123'] },
      redact,
    );
    expect(reviewCursor(runDir, url)).toEqual({
      since: '2026-01-03T00:00:00Z',
      handled: new Set(['[REDACTED]']),
    });
    expect(readFileSync(path.join(runDir, 'review.jsonl'), 'utf8')).not.toContain('secret-token-value-123');
  });
});

describe('a review record read from elsewhere', () => {
  const url = 'https://github.test/acme/app/pull/1';
  const read = (at: string, until: string, handled: string[]) =>
    JSON.stringify({ type: 'review_read', at, url, until, handled });

  it('parses what agent-runner writes, and merges two records as the union of their reads', () => {
    const laptop = parseReviewRecord(
      `${read('2026-01-02T10:06:00Z', '2026-01-02T10:05:00Z', ['7'])}\n`,
      'the laptop',
    );
    const runner = parseReviewRecord(
      [
        read('2026-01-02T10:06:00Z', '2026-01-02T10:05:00Z', ['7']),
        read('2026-01-03T09:00:00Z', '2026-01-03T08:59:00Z', ['11', '12']),
        '',
      ].join('\n'),
      'the runner',
    );
    expect(laptop.problem).toBeNull();
    expect(runner.problem).toBeNull();
    const merged = mergeReviewRecords(runner.reads, laptop.reads);
    expect(merged).toHaveLength(2);
    expect(merged.map((entry) => entry.until)).toEqual(['2026-01-02T10:05:00Z', '2026-01-03T08:59:00Z']);
    // The cursor is the newest `until`, whatever the order the reads came in.
    expect(cursorOf([...merged].reverse(), url)).toEqual({
      since: '2026-01-03T08:59:00Z',
      handled: new Set(['11', '12']),
    });
    expect(cursorOf(merged, 'https://github.test/acme/app/pull/2').since).toBe(SINCE_THE_START);
  });

  it.each([
    ['a NUL byte', `${read('2026-01-02T10:06:00Z', '2026-01-02T10:05:00Z', ['7'])}\u0000\n`, /NUL/],
    ['a line that is not JSON', 'not json\n', /line 1 is not JSON/],
    [
      'another shape',
      `${JSON.stringify({ type: 'review_read', at: 'x', url, until: 'y', handled: [] })}\n`,
      /line 1 at: is not a time/,
    ],
    [
      'an extra key',
      `${JSON.stringify({ type: 'review_read', at: '2026-01-02T10:06:00Z', url, until: '2026-01-02T10:05:00Z', handled: [], maxIterations: 99 })}\n`,
      /Unrecognized key/,
    ],
    [
      'a control character in an id',
      `${read('2026-01-02T10:06:00Z', '2026-01-02T10:05:00Z', ['7\u001b[31m'])}\n`,
      /handled.0: holds a control character/,
    ],
    [
      'a huge record',
      `${read('2026-01-02T10:06:00Z', '2026-01-02T10:05:00Z', ['7'])}\n`.repeat(20_000),
      /is over/,
    ],
  ])('refuses a record with %s, whole', (_what, text, problem) => {
    const parsed = parseReviewRecord(text, 'the remote record');
    expect(parsed.reads).toEqual([]);
    expect(parsed.problem).toMatch(/^the remote record /);
    expect(parsed.problem).toMatch(problem);
  });
});
