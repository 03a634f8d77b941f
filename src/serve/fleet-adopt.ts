/**
 * A review job of a task the fleet did not run (started by `run --pr` or the Action; the webhook wrote its row:
 * src/control/task-queue.ts `enqueueReviewFollowup`), adopted by the node that takes it as
 * `followup --from-review <request>` on a fresh machine rebuilds it: the task's journal, branch and review
 * record from the remote's state ref `refs/agent-runner/tasks/<ID>` (src/compose/remote-task.ts), then the
 * ordinary follow-up from review (fleet-review-followup.ts). Once its journal is copied to the fleet's database,
 * a later review is an ordinary fleet follow-up.
 *
 * The remote without that state ref (the task was never delivered with its state): the node cannot adopt it.
 * Nothing runs; the node logs why and replies once on the request with what `followup --from-review` says
 * then, the comments left unread (a follow-up from review after the state is delivered takes them). The row
 * ends FAILED with that reason rather than being removed: a node may not delete a task's row (the fleet keeps
 * what it was asked), the page and `control status` show it, and a later review of it reopens it (a FAILED task
 * is one that ended) and the node tries the remote again, since the fleet's copy still holds no journal of it.
 */
import { UserError } from '../errors.js';
import type { FleetTask, FleetTaskEnd } from '../control/fleet-node.js';
import type { Redaction } from '../notes/redact.js';
import { readTaskJournal } from '../lifecycle/task-journal-state.js';
import { displayUrl } from '../remote/remote-url.js';
import { taskLayout } from '../workspace/layout.js';
import { openFleetReviewTarget, replyUnread } from './fleet-review-followup.js';

/** The PRD an adopted task started with, from its rebuilt journal in the clone at `root` (null: none recorded). */
export function adoptedPrd(root: string, taskId: string): string | null {
  return readTaskJournal(taskLayout(root, taskId).runDir, taskId)?.options?.prd ?? null;
}

/** Rebuilds `task` from the remote in the clone at `root`; the task's end when it cannot (nothing ran). */
export async function adoptRemoteTask(input: {
  root: string;
  task: FleetTask & { review: NonNullable<FleetTask['review']> };
  env: NodeJS.ProcessEnv;
  redaction: Redaction;
  log: (line: string) => void;
}): Promise<FleetTaskEnd | null> {
  const { root, task, env, redaction } = input;
  const say = (line: string) => input.log(`task ${task.taskId}: ${line}`);
  const url = displayUrl(task.repoUrl);
  const { restoreRemoteTask } = await import('../compose/remote-task.js');
  try {
    await restoreRemoteTask({ root, taskId: task.taskId, url, redact: redaction.redact, warn: say });
  } catch (error) {
    if (!(error instanceof UserError && error.code === 'task_not_found')) throw error;
    const reason = redaction.redact(error.message);
    say(`not adopted for the review of ${task.review.requestUrl}: ${reason}`);
    try {
      const { target } = await openFleetReviewTarget({
        root,
        taskId: task.taskId,
        review: task.review,
        env,
        redaction,
      });
      await replyUnread(target, reason, redaction, say);
    } catch (replyError) {
      say(`no reply on ${task.review.requestUrl}: ${redaction.redact((replyError as Error).message)}`);
    }
    return { state: 'FAILED', exitCode: error.exitCode, reason };
  }
  say(`adopted from ${url}: rebuilt from its state on the remote`);
  return null;
}
