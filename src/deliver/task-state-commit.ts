/**
 * Writes a task's state commit (src/remote/remote-task-state.ts: `task-state.json` + the journal under
 * `refs/agent-runner/tasks/<ID>`) in the host repository, for delivery to push beside the branch. The journal is
 * already redacted as it is written; it goes through the process's redaction once more here (a secret learnt
 * after a line was written, a forge token added at delivery), with its controls shown as JSON escapes, as the
 * journal writes them. The review record (`review.jsonl`: which review comments follow-ups have handled) goes
 * with it, redacted the same way, so a follow-up from review on another machine reads only newer comments.
 * Nothing else of the run directory leaves the machine: not the worker's home (its sessions), the logs, the
 * delivery record or the note.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Redactor } from '../notes/redact.js';
import { showControlsInJson } from '../notes/terminal-text.js';
import {
  MAX_TASK_STATE_BYTES,
  TASK_STATE_FILE,
  TASK_STATE_JOURNAL,
  TASK_STATE_REVIEW,
  taskStateRef,
  type TaskStateHeader,
} from '../remote/remote-task-state.js';
import { git } from '../workspace/git/git-command.js';
import { journalPath } from '../lifecycle/task-journal-state.js';
import { parseReviewRecord, REVIEW_JOURNAL } from '../review/review-record.js';

/** The state commit is agent-runner's own: a fixed identity (a CI clone has no user.name). */
export const STATE_IDENTITY = {
  GIT_AUTHOR_NAME: 'agent-runner',
  GIT_AUTHOR_EMAIL: 'agent-runner@localhost',
  GIT_COMMITTER_NAME: 'agent-runner',
  GIT_COMMITTER_EMAIL: 'agent-runner@localhost',
};

/** The journal's lines, redacted again; the worker's streamed events left out when the whole is over the cap. */
export function stateJournal(
  text: string,
  redact: Redactor,
): { lines: string[]; workerEventsOmitted: boolean } {
  const lines = text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => showControlsInJson(redact(line)))
    // A torn last line (a crash mid-append) is no event: the state holds whole lines only.
    .filter(isJsonLine);
  const bytes = (kept: string[]) => kept.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
  if (bytes(lines) <= MAX_TASK_STATE_BYTES) return { lines, workerEventsOmitted: false };
  const slim = lines.filter((line) => (JSON.parse(line) as { type?: unknown }).type !== 'worker_event');
  return { lines: slim, workerEventsOmitted: true };
}

/** The review record's lines, redacted again; null when there is none, or none a reader would take. */
export function stateReviewRecord(file: string, redact: Redactor): string | null {
  if (!existsSync(file)) return null;
  const text = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => `${showControlsInJson(redact(line))}\n`)
    .join('');
  return text !== '' && parseReviewRecord(text, file).problem === null ? text : null;
}

function isJsonLine(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes the state commit of `taskId` from its journal in `runDir` and points `refs/agent-runner/tasks/<ID>` at
 * it; returns that ref, or null when there is nothing to write (no journal, or one over the cap even slimmed).
 */
export async function writeTaskStateCommit(input: {
  repoRoot: string;
  taskId: string;
  runDir: string;
  redact: Redactor;
}): Promise<string | null> {
  const file = journalPath(input.runDir);
  if (!existsSync(file)) return null;
  const { lines, workerEventsOmitted } = stateJournal(readFileSync(file, 'utf8'), input.redact);
  const journal = lines.map((line) => `${line}\n`).join('');
  if (lines.length === 0 || Buffer.byteLength(journal) > MAX_TASK_STATE_BYTES) return null;
  const header: TaskStateHeader = {
    format: 'agent-runner-task-state',
    version: 1,
    taskId: input.taskId,
    events: lines.length,
    workerEventsOmitted,
  };
  const cwd = input.repoRoot;
  const journalBlob = (await git(['hash-object', '-w', '--stdin'], { cwd, input: journal })).trim();
  const headerBlob = (
    await git(['hash-object', '-w', '--stdin'], { cwd, input: `${JSON.stringify(header, null, 2)}\n` })
  ).trim();
  const review = stateReviewRecord(path.join(input.runDir, REVIEW_JOURNAL), input.redact);
  const reviewBlob =
    review === null ? null : (await git(['hash-object', '-w', '--stdin'], { cwd, input: review })).trim();
  const tree = (
    await git(['mktree', '-z'], {
      cwd,
      input: [
        `100644 blob ${journalBlob}\t${TASK_STATE_JOURNAL}\0`,
        ...(reviewBlob === null ? [] : [`100644 blob ${reviewBlob}\t${TASK_STATE_REVIEW}\0`]),
        `100644 blob ${headerBlob}\t${TASK_STATE_FILE}\0`,
      ].join(''),
    })
  ).trim();
  const commit = (
    await git(['commit-tree', tree, '-m', `agent-runner task state of ${input.taskId}`], {
      cwd,
      env: STATE_IDENTITY,
    })
  ).trim();
  const ref = taskStateRef(input.taskId);
  await git(['update-ref', ref, commit], { cwd });
  return ref;
}
