/**
 * A task rebuilt from its remote alone (a CI runner, a fresh machine: only the remote's URL): in the remote's
 * cached clone, fetched with the task's refs (its branch, its state under `refs/agent-runner/tasks/<ID>`, the
 * evidence notes), the state is read and checked (src/remote/remote-task-state.ts), its journal written where
 * `followup` reads it, the task branch set to the remote's, and the remote's branch head recorded as the commit
 * agent-runner last pushed there (the lease of the next push: src/deliver/delivery-record.ts).
 *
 * This machine's own journal wins when it is at least as long (it ran the task, or continued it, itself). The
 * state's review record is merged into this machine's either way (src/review/review-state.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { appendDelivery } from '../deliver/delivery-record.js';
import { hostRemoteUrl } from '../deliver/push.js';
import { UserError } from '../errors.js';
import { journalPath } from '../lifecycle/task-journal-state.js';
import type { Redactor } from '../notes/redact.js';
import { readTaskState, taskStateRef } from '../remote/remote-task-state.js';
import { displayUrl } from '../remote/remote-url.js';
import { mergeStateReview } from '../review/review-state.js';
import { tryGit } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';

/** How a task's journal came to be here: this machine's own, or the remote's state. */
export type TaskOrigin = 'local' | 'remote';

async function refCommit(cwd: string, ref: string): Promise<string | null> {
  const result = await tryGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd });
  return result.exitCode === 0 ? result.stdout.trim() : null;
}

function journalEvents(file: string): number {
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '').length;
}

/**
 * Makes task `taskId` of the cached clone `root` continuable from what the remote holds (see the module's
 * comment). Throws a UserError with the fix when neither this machine nor the remote has the task.
 */
export async function restoreRemoteTask(input: {
  root: string;
  taskId: string;
  /** The remote as shown (no credentials), for the messages. */
  url: string;
  redact: Redactor;
  /** Says why a part of the state is not used (a review record that is not agent-runner's). */
  warn?: (line: string) => void;
}): Promise<TaskOrigin> {
  const { root, taskId } = input;
  const layout = taskLayout(root, taskId);
  const journalFile = journalPath(layout.runDir);
  const stateRef = taskStateRef(taskId);
  const remoteHead = await refCommit(root, `refs/remotes/origin/${layout.branch}`);
  const hasState = (await refCommit(root, stateRef)) !== null;
  if (!hasState) {
    if (existsSync(journalFile)) return 'local';
    throw new UserError(
      'task_not_found',
      `${input.url} has no task ${taskId} to follow up: ${remoteHead === null ? `no branch ${layout.branch}` : `the branch ${layout.branch} is there, but not the task's state (${stateRef})`}. ` +
        'The state is pushed with the branch by `run --push`/`--pr` and `agent-runner deliver`; deliver the task ' +
        `from the machine that ran it (\`agent-runner deliver ${taskId}\`), then follow it up again.`,
    );
  }
  const state = await readTaskState(root, stateRef, taskId);
  const unused = mergeStateReview(state.review, layout.runDir, stateRef);
  if (unused !== null) input.warn?.(unused);
  if (journalEvents(journalFile) >= state.header.events) return 'local';
  if (remoteHead === null)
    throw new UserError(
      'task_not_found',
      `${input.url} holds the state of task ${taskId} but not its branch ${layout.branch}. Push the branch ` +
        `again from the machine that ran the task (\`agent-runner deliver ${taskId}\`).`,
    );
  await mkdir(path.dirname(journalFile), { recursive: true });
  await writeFile(journalFile, state.journal, { mode: 0o600 });
  await tryGit(['update-ref', layout.branchRef, remoteHead], { cwd: root });
  // The remote's branch is where the task's last delivery left it: the next push replaces exactly that.
  const origin = await hostRemoteUrl(root, 'origin');
  if (origin)
    appendDelivery(
      layout.runDir,
      {
        type: 'delivery',
        outcome: {
          pushed: true,
          url: null,
          error: null,
          skipped: null,
          branch: layout.branch,
          remote: displayUrl(origin.raw),
          sha: remoteHead,
          changeRequest: null,
        },
      },
      input.redact,
    );
  return 'remote';
}
