/**
 * `agent-runner followup <ID|branch> --message TEXT`: continues an ended task (COMPLETE, NEEDS_REVIEW or FAILED)
 * on its own branch with a person's new instruction, held to the same evidence as its first run. The Meta-agent
 * revises the plan (a criterion that held stays as it was), the worker continues on the branch's head in a fresh
 * sandbox, and every criterion is checked again; `--pr` updates the same pull/merge request.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { followupTaskSpec } from '../compose/followup-task-spec.js';
import type { TaskSummary } from '../core/types.js';
import { UserError } from '../errors.js';
import { followupTaskId, resolveFollowupTarget } from './followup-target.js';
import { SERVER_TOKEN_VARIABLE } from './client-commands.js';
import type { CommandContext } from './program.js';
import type { ResumeCommandOptions } from './resume-command.js';
import { driveTask } from './run-command.js';
import { flagsLayer } from './run-flags.js';

export type FollowupCommandOptions = ResumeCommandOptions & {
  message?: string;
  messageFile?: string;
  /** The forge when the remote's host does not say (deliver.forge); with `--repo`, also for the clone. */
  forge?: string;
  /** A server's URL: the follow-up is started there (`POST /api/tasks/{id}/followup`), its id printed at once. */
  server?: string;
  fromReview?: string;
};

/** The instruction from `--message` or `--message-file` (exactly one of them). */
async function instructionOf(options: FollowupCommandOptions, cwd: string): Promise<string> {
  if ((options.message === undefined) === (options.messageFile === undefined))
    throw new UserError(
      'usage',
      'Give the follow-up instruction with exactly one of `--message TEXT` or `--message-file FILE`.',
    );
  if (options.message !== undefined) return options.message;
  const file = path.resolve(cwd, options.messageFile as string);
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new UserError(
      'usage',
      `Cannot read the follow-up instruction ${file}: ${(error as Error).message}. Give a readable file, or --message TEXT.`,
      { cause: error },
    );
  }
}

/** `--server URL`: the server follows its task up (a client of its API); the id is printed, nothing is awaited. */
async function followupOnServer(
  target: string,
  message: string,
  options: FollowupCommandOptions,
  context: CommandContext,
): Promise<null> {
  const taskId = followupTaskId(target);
  const { clientHere } = await import('./client-commands.js');
  const client = await clientHere(context, { server: options.server as string });
  await client.request('POST', `/api/tasks/${encodeURIComponent(taskId)}/followup`, {
    message,
    ...(options.pr ? { pr: true } : {}),
  });
  if (options.json) context.output.out(JSON.stringify({ type: 'followup', taskId, server: client.url }));
  else
    context.output.out(
      `${taskId}: follow-up started on ${client.url} (\`agent-runner wait ${taskId} --server ${client.url}\`)`,
    );
  return null;
}

export async function followupCommand(
  target: string,
  options: FollowupCommandOptions,
  context: CommandContext,
): Promise<TaskSummary | null> {
  if (options.fromReview !== undefined) {
    if (options.message !== undefined || options.messageFile !== undefined)
      throw new UserError(
        'usage',
        '`--from-review URL` takes the instruction from the review: leave out --message and --message-file.',
      );
    const { followupFromReview } = await import('./followup-review.js');
    return followupFromReview(options.fromReview, options, context);
  }
  const instruction = await instructionOf(options, context.cwd);
  if (options.server !== undefined) return followupOnServer(target, instruction, options, context);
  const { taskId, repository, origin } = await resolveFollowupTarget(target, options, context);
  const spec = await followupTaskSpec({
    repoRoot: repository.root,
    taskId,
    instruction,
    origin,
    cwd: context.cwd,
    env: context.env,
    overrides: flagsLayer(options),
    ...(options.config ? { configFile: path.resolve(context.cwd, options.config) } : {}),
    ...(options.keepSandbox !== undefined ? { keepSandbox: options.keepSandbox } : {}),
    ...(options.skipDod !== undefined ? { skipDod: options.skipDod } : {}),
  });
  const remote = repository.url === null ? {} : { remote: { url: repository.url, root: repository.root } };
  return driveTask(spec, {}, { ...options, ...remote }, context);
}

export function registerFollowupCommand(program: Command, context: CommandContext): void {
  program
    .command('followup')
    .description(
      'Continue an ended task on its own branch with a new instruction; every criterion is checked again.',
    )
    .argument(
      '[task]',
      "the task id, its branch agent-runner/<ID> (with --repo: the remote's), or its pull/merge request's URL (none with --from-review)",
    )
    .option('--message <text>', 'the person\'s instruction, e.g. "also handle empty input"')
    .option('--message-file <file>', 'read the instruction from a file')
    .option(
      '--from-review <url>',
      "the review comments of this pull/merge request (agent-runner's) since the last read are the instruction; one reply answers them",
    )
    .option(
      '--repo <url>',
      "the remote whose task it is: fetched now, the task rebuilt from the remote's state when this machine has none",
    )
    .option(
      '--forge <github|gitlab>',
      'the forge when the remote is not on github.com or gitlab.com (also AGENT_RUNNER_FORGE)',
    )
    .option('--model <name>', 'model for the Meta-agent (and the worker, unless worker.model is set)')
    .option('--max-iterations <n>', 'most worker runs of this follow-up')
    .option('--timeout <duration>', 'wall clock of this follow-up, e.g. 45m')
    .option('--skip-dod', 'do not run the Definition-of-Done checks (recorded as skipped)')
    .option('--json', 'JSONL events on stdout, ending with a summary object')
    .option('--headless', 'never prompt (automatic when stdin is not a TTY or CI is set)')
    .option('--keep-sandbox', 'keep the container after the task, for debugging')
    .option('--push', 'push agent-runner/<ID> to deliver.remote (origin) from this machine after the task')
    .option('--pr', 'push, then open or update the pull/merge request whose body is the evidence')
    .option('--config <file>', 'configuration file (default: agent-runner.yaml in the repository root)')
    .option(
      '--server <url>',
      `start the follow-up on that server and return its id at once (its token in ${SERVER_TOKEN_VARIABLE})`,
    )
    .action(async (task: string | undefined, options: FollowupCommandOptions) => {
      if (task === undefined && options.fromReview === undefined)
        throw new UserError(
          'usage',
          'Name the task (`followup ID --message TEXT`) or a request (`followup --from-review URL`).',
        );
      await followupCommand(task ?? '', options, context);
    });
}
