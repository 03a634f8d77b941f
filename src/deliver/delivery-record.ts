/**
 * What a delivery leaves in the task's run data: `.agent-runner/runs/<TASK-ID>/delivery.jsonl`, one line per
 * delivery attempt, appended. It is kept apart from the task's event journal on purpose: a delivery happens
 * after the task's end (maybe hours later, `agent-runner deliver ID`), and the task's journal, from which
 * `resume` measures the wall clock the task used, stays as the task left it.
 *
 * The last attempt that pushed says which commit agent-runner last put on the remote branch: the next push's
 * lease (`--force-with-lease`) expects exactly that commit there, so a commit someone else pushed to the branch
 * is never overwritten. A delivery that rewrote the note records the note's new digest here too (`note_written`,
 * read by src/notes/note-digest.ts), so the note stays the runner's own for memory.
 */
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import { writtenNoteSchema } from '../core/events.js';
import { readJournal } from '../notes/event-journal.js';
import type { Redactor } from '../notes/redact.js';

export const DELIVERY_JOURNAL = 'delivery.jsonl';

/** Why a delivery did not go through, in the words delivery reports. */
export const deliveryErrorSchema = z.object({
  /**
   * `no_remote`, `no_branch`, `unreachable`, `auth`, `permission`, `rejected` (a hook or a protected branch),
   * `stale` (the remote branch moved since agent-runner pushed it), `rate_limited`, `unavailable`, `invalid`,
   * `no_forge`.
   */
  kind: z.string(),
  /** One message with the fix (tokens redacted). */
  message: z.string(),
});

/** One delivery attempt: what it pushed, the pull/merge request, or why not. */
export const deliveryOutcomeSchema = z.object({
  /** The commit of `agent-runner/<ID>` is on the remote now. */
  pushed: z.boolean(),
  /** The pull/merge request's page (null: none asked for, or it failed). */
  url: z.string().nullable(),
  error: deliveryErrorSchema.nullable(),
  /** Why nothing was delivered although delivery was asked for (`when: complete` and the task was not). */
  skipped: z.string().nullable(),
  branch: z.string(),
  /** The remote as shown (no credentials). */
  remote: z.string().nullable(),
  /** The commit pushed (null: nothing pushed). */
  sha: z.string().nullable(),
  changeRequest: z.object({ number: z.number(), draft: z.boolean() }).nullable(),
});
export type DeliveryOutcome = z.infer<typeof deliveryOutcomeSchema>;

const deliveryLineSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('delivery'), at: z.string(), outcome: deliveryOutcomeSchema }),
  z.object({ type: z.literal('note_written'), at: z.string(), ...writtenNoteSchema.shape }),
]);
type DeliveryLine = z.infer<typeof deliveryLineSchema>;

function lines(runDir: string): DeliveryLine[] {
  const file = path.join(runDir, DELIVERY_JOURNAL);
  if (!existsSync(file)) return [];
  return readJournal(file, deliveryLineSchema);
}

/** Every delivery attempt of a task, oldest first. */
export function readDeliveries(runDir: string): DeliveryOutcome[] {
  return lines(runDir).flatMap((line) => (line.type === 'delivery' ? [line.outcome] : []));
}

/** The commit agent-runner last pushed to the task branch on `remote`, or null when it never pushed there. */
export function lastPushedSha(runDir: string, remote: string): string | null {
  const pushed = readDeliveries(runDir).filter((item) => item.pushed && item.remote === remote && item.sha);
  return pushed.at(-1)?.sha ?? null;
}

/** Appends a line (redacted) to the task's delivery journal. */
export function appendDelivery(
  runDir: string,
  line:
    { type: 'delivery'; outcome: DeliveryOutcome } | { type: 'note_written'; path: string; sha256: string },
  redact: Redactor,
): void {
  mkdirSync(runDir, { recursive: true });
  const stamped = { ...line, at: new Date().toISOString() };
  appendFileSync(path.join(runDir, DELIVERY_JOURNAL), `${redact(JSON.stringify(stamped))}\n`);
}
