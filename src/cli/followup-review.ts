/**
 * `agent-runner followup --from-review <PR/MR URL>`: the review comments of a request agent-runner opened become
 * a follow-up's instruction (src/review/), the follow-up runs as `followup --message` does and updates the same
 * request, and one reply on the request says what became of each comment. Comments whose author cannot write
 * to the repository are skipped; when no comment is a writer's, nothing runs (no model call) and the reply says
 * why. Each comment taken gets an `eyes` reaction as it is received.
 */
import path from 'node:path';
import { followupTaskSpec } from '../compose/followup-task-spec.js';
import type { TaskSummary } from '../core/types.js';
import { loadConfig } from '../config/load.js';
import { ForgeError } from '../deliver/forge-error.js';
import { forgeTokens } from '../remote/remote-credentials.js';
import { reviewInstruction, type ReviewInstruction } from '../review/review-comments.js';
import { appendReviewRead, reviewCursor } from '../review/review-record.js';
import { reviewReply } from '../review/review-reply.js';
import { openReviewTarget, type ReviewTarget } from '../review/review-target.js';
import { taskLayout } from '../workspace/layout.js';
import { commandRepositories, taskRepository } from './command-repositories.js';
import type { FollowupCommandOptions } from './followup-command.js';
import type { CommandContext } from './program.js';
import { driveTask } from './run-command.js';
import { flagsLayer } from './run-flags.js';
import { EXIT_CODES } from '../errors.js';

/** Posts the reply; a failure is reported (exit 6 when nothing else failed), never thrown over the task's end. */
async function postReply(target: ReviewTarget, body: string, context: CommandContext): Promise<void> {
  try {
    const url = await target.review.reply(target.request.number, body);
    context.output.err(`agent-runner: replied on the request: ${url}`);
  } catch (error) {
    const message = error instanceof ForgeError ? error.failure.message : (error as Error).message;
    context.output.err(`agent-runner: could not reply on the request: ${message}`);
    context.setExitCode(EXIT_CODES.delivery);
  }
}

/** Marks each comment taken as received; a refused reaction is said, not fatal. */
async function reactToTaken(
  target: ReviewTarget,
  read: ReviewInstruction,
  context: CommandContext,
): Promise<void> {
  for (const item of read.comments) {
    if (item.outcome !== 'taken') continue;
    try {
      await target.review.react(target.request.number, item.comment);
    } catch (error) {
      const message = error instanceof ForgeError ? error.failure.message : (error as Error).message;
      context.output.err(`agent-runner: could not react to comment ${item.comment.id}: ${message}`);
    }
  }
}

/** Reads the comments since the last read, reacts to the ones taken, and records the read. */
async function readReview(
  target: ReviewTarget,
  runDir: string,
  trigger: string,
  context: CommandContext,
): Promise<{ read: ReviewInstruction; since: string }> {
  const requestUrl = target.changeRequest.url;
  const cursor = reviewCursor(runDir, requestUrl);
  const read = await reviewInstruction(target.review, target.request.number, cursor.since, {
    trigger,
    handled: cursor.handled,
  });
  await reactToTaken(target, read, context);
  const times = read.comments.map((item) => item.comment.createdAt);
  appendReviewRead(
    runDir,
    {
      url: requestUrl,
      until: times.reduce((newest, at) => (Date.parse(at) > Date.parse(newest) ? at : newest), cursor.since),
      handled: read.comments.map((item) => item.comment.id),
    },
    context.redaction.redact,
  );
  return { read, since: cursor.since };
}

export async function followupFromReview(
  url: string,
  options: FollowupCommandOptions,
  context: CommandContext,
): Promise<TaskSummary | null> {
  context.redaction.add(forgeTokens(context.env));
  const configFile = options.config ? { configFile: path.resolve(context.cwd, options.config) } : {};
  const [first] = await commandRepositories(options.repo, context);
  const settings = await loadConfig({
    repoRoot: (first as { root: string }).root,
    env: context.env,
    flags: flagsLayer(options),
    ...configFile,
  });
  const target = await openReviewTarget(url, context.env, {
    ...(settings.deliver.apiUrl ? { apiUrl: settings.deliver.apiUrl } : {}),
  });
  const repository = await taskRepository(target.taskId, options.repo, context);
  const { runDir } = taskLayout(repository.root, target.taskId);
  const requestUrl = target.changeRequest.url;
  const { read, since } = await readReview(target, runDir, settings.review.trigger, context);
  const redact = context.redaction.redact;
  if (read.comments.length === 0) {
    context.output.err(
      `agent-runner: no review comment for agent-runner on ${requestUrl} since ${since}: nothing to do.`,
    );
    return null;
  }
  if (read.instruction === null) {
    const reason =
      `nothing ran: none of the ${read.comments.length} comments is from an author with write access to the repository, ` +
      'so none is taken as an instruction; no model was called';
    context.output.err(`agent-runner: ${reason}.`);
    await postReply(
      target,
      reviewReply({ requestUrl, comments: read.comments, summary: null, reason, redact }),
      context,
    );
    return null;
  }
  const spec = await followupTaskSpec({
    repoRoot: repository.root,
    taskId: target.taskId,
    instruction: read.instruction,
    cwd: context.cwd,
    env: context.env,
    overrides: flagsLayer({ ...options, pr: true }),
    ...configFile,
    ...(options.keepSandbox !== undefined ? { keepSandbox: options.keepSandbox } : {}),
    ...(options.skipDod !== undefined ? { skipDod: options.skipDod } : {}),
  });
  const remote = repository.url === null ? {} : { remote: { url: repository.url, root: repository.root } };
  let summary: TaskSummary;
  try {
    summary = await driveTask(spec, {}, { ...options, ...remote }, context);
  } catch (error) {
    const reason = `the follow-up stopped before its end: ${(error as Error).message}`;
    await postReply(
      target,
      reviewReply({ requestUrl, comments: read.comments, summary: null, reason, redact }),
      context,
    );
    throw error;
  }
  await postReply(
    target,
    reviewReply({ requestUrl, comments: read.comments, summary, reason: null, redact }),
    context,
  );
  return summary;
}
