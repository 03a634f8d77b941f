/**
 * A task's state as the remote keeps it, so that `followup` works on a machine that has only the remote: the
 * task's event journal (the redacted `events.jsonl`, what `resume` and `followup` rebuild a task from) in a
 * commit under `refs/agent-runner/tasks/<ID>`, pushed beside the branch and the evidence notes at delivery
 * (src/deliver/task-state-commit.ts writes it).
 *
 * Anyone with push access to the remote can write that ref, so what is read back is untrusted input: bounded in
 * size before it is read, every line parsed with the journal's own schema, the task it names checked, and
 * nothing in it ever run or followed. What the follow-up takes from it is the history the Meta-agent is shown and
 * the plan it revises; what it does NOT take is anything that would weaken the bar (the base's recorded DoD, a
 * skipped DoD, a forge, a PRD path to read from this machine): every criterion is checked again anyway.
 */
import * as z from 'zod';
import { stampedEventSchema, type StampedEvent } from '../core/events.js';
import { UserError } from '../errors.js';
import { parseJournalLine } from '../notes/event-journal.js';
import { MAX_REVIEW_RECORD_BYTES } from '../review/review-record.js';
import { tryGit } from '../workspace/git/git-command.js';

/** The ref of a task's state on the remote (and in the host repository that pushes or fetched it). */
export function taskStateRef(taskId: string): string {
  return `refs/agent-runner/tasks/${taskId}`;
}

/** The files of a state commit's tree: nothing else may be there (the review record only when there is one). */
export const TASK_STATE_FILE = 'task-state.json';
export const TASK_STATE_JOURNAL = 'events.jsonl';
/** The review record (src/review/review-record.ts): which comments follow-ups from review have handled. */
export const TASK_STATE_REVIEW = 'review.jsonl';

/**
 * The most a state's journal may weigh, pushed or read. A journal over it is pushed without its worker events
 * (the worker's streamed output: the history keeps each run's record); a remote one over it is refused unread.
 */
export const MAX_TASK_STATE_BYTES = 16 * 1024 * 1024;

/** `task-state.json`: what the commit is, checked before its journal is read. */
export const taskStateSchema = z.strictObject({
  format: z.literal('agent-runner-task-state'),
  version: z.literal(1),
  taskId: z.string().max(200),
  /** Events in the journal, and whether the worker's streamed events were left out to stay under the cap. */
  events: z.number().int().nonnegative(),
  workerEventsOmitted: z.boolean(),
});
export type TaskStateHeader = z.infer<typeof taskStateSchema>;

/** A remote state that passed every check: its journal's text (one event a line) and its events. */
export interface RemoteTaskState {
  header: TaskStateHeader;
  journal: string;
  events: StampedEvent[];
  /** The review record as the state holds it (unchecked text), why it is not used, or null: none there. */
  review: StateReviewRecord;
}

/** A state's review record: its text (checked by its reader, src/review/review-record.ts), or why it is unread. */
export type StateReviewRecord = { text: string } | { problem: string } | null;

function refused(taskId: string, ref: string, problem: string): UserError {
  return new UserError(
    'journal_invalid',
    `The task state ${ref} on the remote is not what agent-runner pushes for task ${taskId}: ${problem}. ` +
      'It was written by someone else, or by an incompatible version, and is not used. Push it again from the ' +
      `machine that ran the task (\`agent-runner deliver ${taskId}\`), or delete that ref on the remote and ` +
      'start a new task with `agent-runner run --prd FILE`.',
  );
}

/**
 * Reads and checks the state commit at `ref` of `repoRoot` (fetched from the remote). Throws a UserError
 * (`journal_invalid`, exit 2) naming the first problem; never reads more than {@link MAX_TASK_STATE_BYTES}.
 */
export async function readTaskState(repoRoot: string, ref: string, taskId: string): Promise<RemoteTaskState> {
  const listing = await tryGit(['ls-tree', '-z', '-l', `${ref}^{commit}`], {
    cwd: repoRoot,
    maxOutputBytes: 64 * 1024,
  });
  if (listing.exitCode !== 0) throw refused(taskId, ref, 'it is not a commit');
  const entries = new Map<string, { mode: string; size: number }>();
  for (const line of listing.stdout.split('\0').filter(Boolean)) {
    const match = /^(\d+) \w+ [0-9a-f]+ +(-|\d+)\t(.*)$/s.exec(line);
    if (!match) throw refused(taskId, ref, 'its tree cannot be read');
    entries.set(match[3] as string, { mode: match[1] as string, size: Number(match[2]) });
  }
  const names = [...entries.keys()].filter((name) => name !== TASK_STATE_REVIEW).sort();
  if (names.join('\n') !== [TASK_STATE_JOURNAL, TASK_STATE_FILE].sort().join('\n'))
    throw refused(
      taskId,
      ref,
      `its tree holds ${JSON.stringify([...entries.keys()]).slice(0, 200)}, not ${TASK_STATE_FILE} and ${TASK_STATE_JOURNAL} (and ${TASK_STATE_REVIEW}) alone`,
    );
  const review = entries.get(TASK_STATE_REVIEW);
  entries.delete(TASK_STATE_REVIEW);
  for (const [name, entry] of entries) {
    // A plain file only: a link, a directory or a submodule is not what agent-runner writes.
    if (entry.mode !== '100644') throw refused(taskId, ref, `${name} is not a plain file`);
    if (entry.size > MAX_TASK_STATE_BYTES)
      throw refused(
        taskId,
        ref,
        `${name} is ${entry.size} bytes, over the ${MAX_TASK_STATE_BYTES} a state may hold`,
      );
  }
  const headerText = await blob(repoRoot, `${ref}:${TASK_STATE_FILE}`);
  let header: TaskStateHeader;
  try {
    const parsed = taskStateSchema.safeParse(JSON.parse(headerText));
    if (!parsed.success)
      throw refused(
        taskId,
        ref,
        `${TASK_STATE_FILE} ${parsed.error.issues[0]?.path.join('.') || ''}: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      );
    header = parsed.data;
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw refused(taskId, ref, `${TASK_STATE_FILE} is not JSON`);
  }
  if (header.taskId !== taskId) throw refused(taskId, ref, `it names task ${JSON.stringify(header.taskId)}`);
  const journal = await blob(repoRoot, `${ref}:${TASK_STATE_JOURNAL}`);
  const events = journalEvents(journal, `${ref}:${TASK_STATE_JOURNAL}`, taskId, ref);
  if (events.length !== header.events)
    throw refused(
      taskId,
      ref,
      `its journal has ${events.length} events, ${TASK_STATE_FILE} says ${header.events}`,
    );
  return { header, journal, events, review: await reviewRecordOf(repoRoot, ref, review) };
}

/** The review record of the state at `ref`: never more than {@link MAX_REVIEW_RECORD_BYTES} read. */
async function reviewRecordOf(
  repoRoot: string,
  ref: string,
  entry: { mode: string; size: number } | undefined,
): Promise<StateReviewRecord> {
  const where = `${ref}:${TASK_STATE_REVIEW}`;
  if (entry === undefined) return null;
  if (entry.mode !== '100644') return { problem: `${where} is not a plain file` };
  if (entry.size > MAX_REVIEW_RECORD_BYTES)
    return {
      problem: `${where} is ${entry.size} bytes, over the ${MAX_REVIEW_RECORD_BYTES} a review record may hold`,
    };
  return { text: await blob(repoRoot, where) };
}

/** Every line parsed with the journal's schema (no torn line: the state was written whole), then the task checked. */
function journalEvents(text: string, file: string, taskId: string, ref: string): StampedEvent[] {
  const events: StampedEvent[] = [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  lines.forEach((line, index) => {
    let parsed: { event: StampedEvent } | null;
    try {
      parsed = parseJournalLine(file, index + 1, line, stampedEventSchema);
    } catch (error) {
      throw refused(
        taskId,
        ref,
        `line ${index + 1} ${(error as { problem?: string }).problem ?? 'is invalid'}`,
      );
    }
    if (parsed === null) throw refused(taskId, ref, `line ${index + 1} is not JSON`);
    events.push(parsed.event);
  });
  if (!events.some((event) => event.type === 'task_started'))
    throw refused(taskId, ref, "its journal does not hold the task's start");
  for (const event of events) {
    if (event.type !== 'task_started') continue;
    if (event.taskId !== taskId || event.branch !== `agent-runner/${taskId}`)
      throw refused(
        taskId,
        ref,
        `its journal starts task ${JSON.stringify(event.taskId).slice(0, 80)} on ${JSON.stringify(event.branch).slice(0, 120)}`,
      );
  }
  if (!events.some((event) => event.type === 'task_started' && event.options?.prd !== undefined))
    throw refused(taskId, ref, 'its journal does not carry the PRD the task ran');
  return events;
}

async function blob(repoRoot: string, object: string): Promise<string> {
  const result = await tryGit(['cat-file', 'blob', object], {
    cwd: repoRoot,
    maxOutputBytes: MAX_TASK_STATE_BYTES + 1,
  }).catch(() => null);
  if (result === null || result.exitCode !== 0)
    throw new UserError(
      'journal_invalid',
      `Cannot read ${object}: the remote's task state is incomplete. Push it again with \`agent-runner deliver\`.`,
    );
  return result.stdout;
}
