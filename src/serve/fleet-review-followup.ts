/**
 * A follow-up from review on a node of the fleet (the job a review's webhook queued: src/control/task-queue.ts,
 * `enqueueReviewFollowup`), done as `followup --from-review <request>` does it: the request read through the
 * forge with this node's token (`deliver.apiUrl` of the repository's configuration), its head branch naming this
 * task; the review record merged with the one the task's state on the remote carries (another node may have read
 * the last round); the writers' comments since then taken (an `eyes` reaction each), and the follow-up run on the
 * task's board, delivered to the same request; one reply after it. No writer's comment: nothing runs and the
 * reply says why; no new comment: nothing runs, nothing is said on the request.
 */
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { FleetReviewFollowup } from '../control/task-queue-options.js';
import type { Redaction } from '../notes/redact.js';
import { forgeTokens } from '../remote/remote-credentials.js';
import { namedForge } from '../remote/remote-url.js';
import { publishReviewRecord } from '../review/review-record-push.js';
import { reviewReply } from '../review/review-reply.js';
import { noWriterReason, postReviewReply, readReviewRound } from '../review/review-round.js';
import { mergeFetchedReview } from '../review/review-state.js';
import { openReviewTarget, type ReviewTarget } from '../review/review-target.js';
import { taskLayout } from '../workspace/layout.js';
import type { TaskBoard } from './task-board.js';

/** A follow-up that was started: `reply` answers on the request once it has ended. */
export interface StartedReviewFollowup {
  reply: () => Promise<void>;
}

/**
 * Reads the review and starts the follow-up on `board` (the task's clone at `root`); null when nothing runs
 * (the reply, if any, already posted).
 */
export async function startFleetReviewFollowup(input: {
  board: TaskBoard;
  root: string;
  taskId: string;
  review: FleetReviewFollowup;
  env: NodeJS.ProcessEnv;
  redaction: Redaction;
  log: (line: string) => void;
  /** The node's git config for pushes to the task's remote (its credential), when it has one. */
  credentialConfig?: Record<string, string>;
}): Promise<StartedReviewFollowup | null> {
  const { board, root, taskId, redaction } = input;
  const say = (line: string) => input.log(`task ${taskId}: ${line}`);
  const { config, target } = await openFleetReviewTarget(input);
  const { runDir } = taskLayout(root, taskId);
  const unused = await mergeFetchedReview(root, taskId, runDir);
  if (unused !== null) say(unused);
  const { read, since } = await readReviewRound({
    target,
    runDir,
    trigger: config.review.trigger,
    redact: redaction.redact,
    say,
  });
  const requestUrl = target.changeRequest.url;
  if (read.comments.length === 0) {
    say(`no review comment for agent-runner on ${requestUrl} since ${since}: nothing to do`);
    return null;
  }
  if (read.instruction === null) {
    const reason = noWriterReason(read.comments.length);
    say(reason);
    await reply(target, read.comments, null, reason, redaction, say);
    // The next round, on any node, starts after this one: its record goes into the task's state on the remote.
    await publishReviewRecord({
      repoRoot: root,
      taskId,
      runDir,
      remoteName: 'origin',
      env: input.env,
      forgeOverride: namedForge(undefined, input.env),
      ...(input.credentialConfig ? { credentialConfig: input.credentialConfig } : {}),
      redact: redaction.redact,
      say,
    });
    return null;
  }
  await board.followup(taskId, { message: read.instruction, pr: true });
  return {
    reply: async () => {
      const summary = (await board.detail(taskId))?.summary ?? null;
      const reason = summary?.followup ? null : 'the follow-up stopped before its end';
      await reply(target, read.comments, summary, reason, redaction, say);
    },
  };
}

/**
 * The request of a review job, read through the forge with this node's token (`deliver.apiUrl` of the
 * repository's configuration in the clone at `root`); refused unless its head branch names this task.
 */
export async function openFleetReviewTarget(input: {
  root: string;
  taskId: string;
  review: FleetReviewFollowup;
  env: NodeJS.ProcessEnv;
  redaction: Redaction;
}): Promise<{ config: Config; target: ReviewTarget }> {
  const { root, taskId, env } = input;
  input.redaction.add(forgeTokens(env));
  const config = await loadConfig({ repoRoot: root, env, flags: {} });
  const target = await openReviewTarget(input.review.requestUrl, env, {
    ...(config.deliver.apiUrl ? { apiUrl: config.deliver.apiUrl } : {}),
  });
  if (target.taskId !== taskId)
    throw new Error(
      `${input.review.requestUrl} merges agent-runner/${target.taskId}, not this task's branch`,
    );
  return { config, target };
}

/**
 * The one reply of a review job that could not run at all (the task's state is not on the remote): why, and
 * that the comments stay unread for the next follow-up from review.
 */
export async function replyUnread(
  target: ReviewTarget,
  reason: string,
  redaction: Redaction,
  say: (line: string) => void,
): Promise<void> {
  const requestUrl = target.changeRequest.url;
  const body = reviewReply({
    requestUrl,
    comments: [],
    summary: null,
    reason,
    unread: true,
    redact: redaction.redact,
  });
  await postReviewReply(target, body, say);
}

async function reply(
  target: ReviewTarget,
  comments: Parameters<typeof reviewReply>[0]['comments'],
  summary: Parameters<typeof reviewReply>[0]['summary'],
  reason: string | null,
  redaction: Redaction,
  say: (line: string) => void,
): Promise<void> {
  const requestUrl = target.changeRequest.url;
  const body = reviewReply({ requestUrl, comments, summary, reason, redact: redaction.redact });
  await postReviewReply(target, body, say);
}
