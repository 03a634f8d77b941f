/**
 * `agent-runner followup --from-review <PR/MR URL>`: the review comments of a request agent-runner opened become
 * a follow-up's instruction (src/review/), the follow-up runs as `followup --message` does and updates the same
 * request, and one reply on the request says what became of each comment. Comments whose author cannot write
 * to the repository are skipped; when no comment is a writer's, nothing runs (no model call) and the reply says
 * why. Each comment taken gets an `eyes` reaction as it is received. The task is this machine's when it has its
 * journal, else rebuilt from the request's remote (a fresh CI runner), its review record with it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { followupTaskSpec } from '../compose/followup-task-spec.js';
import type { TaskSummary } from '../core/types.js';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { UserError } from '../errors.js';
import { journalPath } from '../lifecycle/task-journal-state.js';
import { forgeTokens } from '../remote/remote-credentials.js';
import { namedForge } from '../remote/remote-url.js';
import type { HandledComment } from '../review/review-comments.js';
import { reviewReply } from '../review/review-reply.js';
import { publishReviewRecord } from '../review/review-record-push.js';
import { noWriterReason, postReviewReply, readReviewRound } from '../review/review-round.js';
import { openReviewTarget, type ReviewTarget } from '../review/review-target.js';
import { taskLayout } from '../workspace/layout.js';
import { commandRepositories, taskRepository } from './command-repositories.js';
import type { FollowupCommandOptions } from './followup-command.js';
import { resolveFollowupTarget, type FollowupTarget } from './followup-target.js';
import type { CommandContext } from './program.js';
import { driveTask } from './run-command.js';
import { flagsLayer } from './run-flags.js';
import { EXIT_CODES } from '../errors.js';

/** Posts the reply; a failure is reported (exit 6 when nothing else failed). */
async function postReply(target: ReviewTarget, body: string, context: CommandContext): Promise<void> {
  if (!(await postReviewReply(target, body, (line) => context.output.err(`agent-runner: ${line}`))))
    context.setExitCode(EXIT_CODES.delivery);
}

/**
 * The repository that holds the task: this machine's (the working directory's, or `--repo`'s cache) when it
 * has the task's journal; else the request's remote, the task rebuilt from the state it holds
 * (followup-target.ts), as on a fresh CI runner.
 */
async function reviewRepository(
  target: ReviewTarget,
  url: string,
  options: FollowupCommandOptions,
  context: CommandContext,
): Promise<FollowupTarget> {
  const here = await taskRepository(target.taskId, options.repo, context).catch(() => null);
  if (here !== null && existsSync(journalPath(taskLayout(here.root, target.taskId).runDir)))
    return { taskId: target.taskId, repository: here, origin: 'local' };
  const followed = await resolveFollowupTarget(url, options, context);
  if (followed.taskId !== target.taskId)
    throw new UserError('usage', `${url} changed its branch while it was read: run the follow-up again.`);
  return followed;
}

export async function followupFromReview(
  url: string,
  options: FollowupCommandOptions,
  context: CommandContext,
): Promise<TaskSummary | null> {
  context.redaction.add(forgeTokens(context.env));
  const configFile = options.config ? { configFile: path.resolve(context.cwd, options.config) } : {};
  // A fresh runner may stand in no repository: the configuration is then --config's alone.
  const first = (await commandRepositories(options.repo, context).catch(() => []))[0];
  const settings = await loadConfig({
    repoRoot: first?.root ?? context.cwd,
    env: context.env,
    flags: flagsLayer(options),
    ...configFile,
  });
  const target = await openReviewTarget(url, context.env, {
    ...(settings.deliver.apiUrl ? { apiUrl: settings.deliver.apiUrl } : {}),
  });
  const { repository, origin } = await reviewRepository(target, url, options, context);
  const { runDir } = taskLayout(repository.root, target.taskId);
  const requestUrl = target.changeRequest.url;
  const redact = context.redaction.redact;
  const { read, since } = await readReviewRound({
    target,
    runDir,
    trigger: settings.review.trigger,
    redact,
    say: (line) => context.output.err(`agent-runner: ${line}`),
  });
  if (read.comments.length === 0) {
    context.output.err(
      `agent-runner: no review comment for agent-runner on ${requestUrl} since ${since}: nothing to do.`,
    );
    return null;
  }
  if (read.instruction === null) {
    await answerNonWriters(
      { target, comments: read.comments, root: repository.root, runDir, settings },
      context,
    );
    return null;
  }
  const spec = await followupTaskSpec({
    repoRoot: repository.root,
    taskId: target.taskId,
    instruction: read.instruction,
    origin,
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

/**
 * A round whose comments are all by non-writers: nothing runs; the one reply says why, and the round's record
 * goes to the remote so the next round (a later CI job, another machine) starts after it.
 */
async function answerNonWriters(
  round: {
    target: ReviewTarget;
    comments: HandledComment[];
    root: string;
    runDir: string;
    settings: Config;
  },
  context: CommandContext,
): Promise<void> {
  const { target, comments, settings } = round;
  const redact = context.redaction.redact;
  const reason = noWriterReason(comments.length);
  context.output.err(`agent-runner: ${reason}.`);
  const requestUrl = target.changeRequest.url;
  await postReply(target, reviewReply({ requestUrl, comments, summary: null, reason, redact }), context);
  await publishReviewRecord({
    repoRoot: round.root,
    taskId: target.taskId,
    runDir: round.runDir,
    remoteName: settings.deliver.remote,
    env: context.env,
    forgeOverride:
      settings.deliver.forge !== 'auto' ? settings.deliver.forge : namedForge(undefined, context.env),
    redact,
    say: (line) => context.output.err(`agent-runner: ${line}`),
  });
}
