/**
 * What a read of a request's review leaves in the task's run data: `.agent-runner/runs/<TASK-ID>/review.jsonl`,
 * one line per read (the request's URL, the comments it handled, the newest comment's time as the forge gave
 * it). The next read of the same request starts from the newest such time ("since") and leaves out the ids
 * handled at that time, so a comment is answered once and a comment made while a follow-up ran is read by the
 * next one. The first read of a request takes every comment it has (none can be older than the request
 * agent-runner opened).
 *
 * The record travels with the task's state on the remote (src/remote/remote-task-state.ts), so a follow-up from
 * review on a fresh CI runner or another node of a fleet starts where the last one stopped. A record read back
 * from the remote is untrusted: bounded, every line checked with the schema below, and refused whole (never
 * partly trusted) when anything in it is not what agent-runner writes. Records merge as a union of their
 * reads: the cursor is computed from the newest `until`, whatever the lines' order.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import type { Redactor } from '../notes/redact.js';

export const REVIEW_JOURNAL = 'review.jsonl';

/** Before any comment: the first read of a request takes them all. */
export const SINCE_THE_START = '1970-01-01T00:00:00.000Z';

/** The most a review record may weigh (thousands of reads); a larger one is refused unread. */
export const MAX_REVIEW_RECORD_BYTES = 1024 * 1024;

/** Text agent-runner writes there: no control character (a NUL, an escape), bounded. */
const plain = (max: number) =>
  z
    .string()
    .max(max)
    // eslint-disable-next-line no-control-regex
    .refine((text) => !/[\u0000-\u001f\u007f]/.test(text), 'holds a control character');
const instant = plain(40).refine((text) => Number.isFinite(Date.parse(text)), 'is not a time');

const reviewReadSchema = z.strictObject({
  type: z.literal('review_read'),
  at: instant,
  /** The request's page. */
  url: plain(2_000).refine((text) => /^https?:\/\//.test(text), 'is not a web address'),
  /** The newest comment's time among those read (the forge's clock), or the previous `until` when none. */
  until: instant,
  /** Ids of the comments handled (taken or skipped): the forge's numbers, as text. */
  handled: z.array(plain(100)).max(10_000),
});
export type ReviewRead = z.infer<typeof reviewReadSchema>;

/** A record's reads, or why the whole record is refused (`source` names where it came from). */
export type ParsedReviewRecord = { reads: ReviewRead[]; problem: null } | { reads: []; problem: string };

/** Parses a record's text: every line must be a read as agent-runner writes it, or nothing of it is used. */
export function parseReviewRecord(text: string, source: string): ParsedReviewRecord {
  const refuse = (problem: string): ParsedReviewRecord => ({ reads: [], problem: `${source} ${problem}` });
  if (Buffer.byteLength(text) > MAX_REVIEW_RECORD_BYTES)
    return refuse(`is over ${MAX_REVIEW_RECORD_BYTES} bytes`);
  if (text.includes('\0')) return refuse('holds a NUL byte');
  const reads: ReviewRead[] = [];
  const lines = text.split('\n');
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return refuse(`line ${index + 1} is not JSON`);
    }
    const parsed = reviewReadSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return refuse(`line ${index + 1} ${issue?.path.join('.') || 'is'}: ${issue?.message ?? 'invalid'}`);
    }
    reads.push(parsed.data);
  }
  return { reads, problem: null };
}

/** The union of records' reads (a read in both once), oldest first. */
export function mergeReviewRecords(...records: readonly ReviewRead[][]): ReviewRead[] {
  const seen = new Map<string, ReviewRead>();
  for (const read of records.flat()) seen.set(recordLine(read), read);
  return [...seen.values()].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}

/** Where the next read of `url` starts, and the ids read at that very time already. */
export function cursorOf(reads: readonly ReviewRead[], url: string): { since: string; handled: Set<string> } {
  const ofUrl = reads.filter((read) => read.url === url);
  if (ofUrl.length === 0) return { since: SINCE_THE_START, handled: new Set() };
  const since = ofUrl.reduce(
    (newest, read) => (Date.parse(read.until) > Date.parse(newest) ? read.until : newest),
    SINCE_THE_START,
  );
  const atSince = ofUrl.filter((read) => Date.parse(read.until) === Date.parse(since));
  return { since, handled: new Set(atSince.flatMap((read) => read.handled)) };
}

/** This machine's record of the task in `runDir` (written by agent-runner here: a bad one is an error). */
export function readReviewRecord(runDir: string): ReviewRead[] {
  const file = path.join(runDir, REVIEW_JOURNAL);
  if (!existsSync(file)) return [];
  const parsed = parseReviewRecord(readFileSync(file, 'utf8'), file);
  if (parsed.problem !== null)
    throw new Error(`${parsed.problem}: move it away to read the review from its start`);
  return parsed.reads;
}

/** Where the next read of `url` starts, from this machine's record. */
export function reviewCursor(runDir: string, url: string): { since: string; handled: Set<string> } {
  return cursorOf(readReviewRecord(runDir), url);
}

/**
 * Merges a record read from the remote into this machine's. Returns null when merged, or the reason the remote's
 * record was refused (it is then not used at all: the local record stays as it was).
 */
export function mergeRemoteReviewRecord(runDir: string, remote: string, source: string): string | null {
  const parsed = parseReviewRecord(remote, source);
  if (parsed.problem !== null) return parsed.problem;
  const merged = mergeReviewRecords(readReviewRecord(runDir), parsed.reads);
  mkdirSync(runDir, { recursive: true });
  writeFileSync(path.join(runDir, REVIEW_JOURNAL), merged.map((read) => `${recordLine(read)}\n`).join(''), {
    mode: 0o600,
  });
  return null;
}

function recordLine(read: ReviewRead): string {
  const { type, at, url, until, handled } = read;
  return JSON.stringify({ type, at, url, until, handled });
}

/** Appends one read (redacted) to the task's review record. */
export function appendReviewRead(
  runDir: string,
  read: Omit<ReviewRead, 'type' | 'at'>,
  redact: Redactor,
): void {
  mkdirSync(runDir, { recursive: true });
  const line = recordLine({ type: 'review_read', at: new Date().toISOString(), ...read });
  appendFileSync(path.join(runDir, REVIEW_JOURNAL), `${redact(line)}\n`, { mode: 0o600 });
}
