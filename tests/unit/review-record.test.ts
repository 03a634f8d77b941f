/**
 * Where a read of a request's review starts: the first read takes every comment; a later one starts at the
 * newest comment the last read saw and leaves out the ids it handled at that time; reads of another request
 * do not move it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Redaction } from '../../src/notes/redact.js';
import { appendReviewRead, reviewCursor, SINCE_THE_START } from '../../src/review/review-record.js';

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
