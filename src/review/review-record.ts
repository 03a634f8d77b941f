/**
 * What a read of a request's review leaves in the task's run data: `.agent-runner/runs/<TASK-ID>/review.jsonl`,
 * one line per read (the request's URL, the comments it handled, the newest comment's time as the forge gave
 * it). The next read of the same request starts from that time ("since") and leaves out the ids handled then,
 * so a comment is answered once and a comment made while a follow-up ran is read by the next one. The first
 * read of a request takes every comment it has (none can be older than the request agent-runner opened).
 */
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { readJournal } from '../notes/event-journal.js';
import type { Redactor } from '../notes/redact.js';

export const REVIEW_JOURNAL = 'review.jsonl';

/** Before any comment: the first read of a request takes them all. */
export const SINCE_THE_START = '1970-01-01T00:00:00.000Z';

const reviewReadSchema = z.object({
  type: z.literal('review_read'),
  at: z.string(),
  /** The request's page. */
  url: z.string(),
  /** The newest comment's time among those read (the forge's clock), or the previous `until` when none. */
  until: z.string(),
  /** Ids of the comments handled (taken or skipped). */
  handled: z.array(z.string()),
});
export type ReviewRead = z.infer<typeof reviewReadSchema>;

/** Where the next read of `url` starts, and the ids read at that very time already. */
export function reviewCursor(runDir: string, url: string): { since: string; handled: Set<string> } {
  const file = path.join(runDir, REVIEW_JOURNAL);
  const reads = existsSync(file)
    ? readJournal(file, reviewReadSchema).filter((read) => read.url === url)
    : [];
  const last = reads.at(-1);
  if (!last) return { since: SINCE_THE_START, handled: new Set() };
  return {
    since: last.until,
    handled: new Set(reads.filter((read) => read.until === last.until).flatMap((read) => read.handled)),
  };
}

/** Appends one read (redacted) to the task's review journal. */
export function appendReviewRead(
  runDir: string,
  read: Omit<ReviewRead, 'type' | 'at'>,
  redact: Redactor,
): void {
  mkdirSync(runDir, { recursive: true });
  const line = { type: 'review_read', at: new Date().toISOString(), ...read };
  appendFileSync(path.join(runDir, REVIEW_JOURNAL), `${redact(JSON.stringify(line))}\n`);
}
