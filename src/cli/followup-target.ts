/**
 * What `followup` continues: a task of this machine (`<ID>`, `agent-runner/<ID>`), the task of a remote
 * (`--repo URL`: its cached clone fetched now, with the task's refs), or the task behind a pull/merge request
 * (its page's URL: the request read through the forge's API, its head branch `agent-runner/<ID>` of the
 * request's own repository). From a remote, a machine with no state directory rebuilds the task from what the
 * remote holds (src/compose/remote-task.ts).
 */
import path from 'node:path';
import type { TaskOrigin } from '../compose/remote-task.js';
import { isValidTaskId } from '../core/task-id.js';
import { UserError } from '../errors.js';
import { namedForge, type ForgeKind } from '../remote/remote-url.js';
import type { ChangeRequestUrl } from '../verify/change-request-target.js';
import { tryGit } from '../workspace/git/git-command.js';
import { taskRepository, type CommandRepository } from './command-repositories.js';
import type { FollowupCommandOptions } from './followup-command.js';
import type { CommandContext } from './program.js';

export interface FollowupTarget {
  taskId: string;
  repository: CommandRepository;
  origin: TaskOrigin;
}

/** `agent-runner/<ID>` or `<ID>`: the task's id. */
export function followupTaskId(target: string): string {
  return target.startsWith('agent-runner/') ? target.slice('agent-runner/'.length) : target;
}

export async function resolveFollowupTarget(
  target: string,
  options: FollowupCommandOptions,
  context: CommandContext,
): Promise<FollowupTarget> {
  const { parseChangeRequestUrl } = await import('../verify/change-request-target.js');
  const request = parseChangeRequestUrl(target);
  if (request) return requestTarget(request, target, options, context);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target))
    throw new UserError(
      'usage',
      `${target} is neither a task id nor a pull/merge request's page (https://HOST/OWNER/NAME/pull/N, ` +
        'https://HOST/GROUP/NAME/-/merge_requests/N). For a remote branch give `--repo URL agent-runner/<ID>`.',
    );
  const taskId = followupTaskId(target);
  if (options.repo === undefined)
    return { taskId, repository: await taskRepository(taskId, undefined, context), origin: 'local' };
  return remoteTarget(options.repo, taskId, namedForge(options.forge, context.env), context);
}

/** The task `taskId` of the remote `url`: its cached clone fetched (cloned the first time), then restored. */
async function remoteTarget(
  url: string,
  taskId: string,
  forge: ForgeKind | null,
  context: CommandContext,
): Promise<FollowupTarget> {
  if (!isValidTaskId(taskId))
    throw new UserError('usage', `${JSON.stringify(taskId)} is no task id; give <ID> or agent-runner/<ID>.`);
  const { prepareRepositoryCache } = await import('../remote/repository-cache.js');
  const cached = await prepareRepositoryCache({
    url,
    env: context.env,
    forge,
    taskRefs: taskId,
  });
  context.redaction.add(cached.secrets);
  context.output.err(`agent-runner: ${cached.how} ${cached.url} in ${cached.root}`);
  const { restoreRemoteTask } = await import('../compose/remote-task.js');
  const origin = await restoreRemoteTask({
    root: cached.root,
    taskId,
    url: cached.url,
    redact: context.redaction.redact,
    warn: (line) => context.output.err(`agent-runner: ${line}`),
  });
  return { taskId, repository: { root: cached.root, url: cached.url }, origin };
}

/**
 * The task behind a pull/merge request: its repository (`--repo URL`, else the page's repository on its host),
 * its head branch `agent-runner/<ID>`, which must hold exactly the commit the forge says the request proposes
 * (a fork's branch of the same name is not the task's).
 */
async function requestTarget(
  request: ChangeRequestUrl,
  page: string,
  options: FollowupCommandOptions,
  context: CommandContext,
): Promise<FollowupTarget> {
  const url = options.repo ?? `${request.origin}/${request.repository}.git`;
  const { prepareRepositoryCache } = await import('../remote/repository-cache.js');
  const forge = namedForge(options.forge, context.env) ?? request.forge;
  // The clone first (the configuration of the repository says where the forge's API is), the task's refs after.
  const cached = await prepareRepositoryCache({ url, env: context.env, forge });
  context.redaction.add(cached.secrets);
  const { loadConfig } = await import('../config/load.js');
  const config = await loadConfig({
    repoRoot: cached.root,
    env: context.env,
    flags: {},
    ...(options.config ? { configFile: path.resolve(context.cwd, options.config) } : {}),
  });
  const { readChangeRequest } = await import('../verify/change-request-target.js');
  const proposed = await readChangeRequest(request, context.env, {
    ...(config.deliver.apiUrl ? { apiUrl: config.deliver.apiUrl } : {}),
    forge,
  });
  const taskId = proposed.head.startsWith('agent-runner/') ? proposed.head.slice('agent-runner/'.length) : '';
  if (!isValidTaskId(taskId))
    throw new UserError(
      'usage',
      `${page} merges ${JSON.stringify(proposed.head).slice(0, 120)}, not a task branch agent-runner/<ID>: ` +
        'only a request agent-runner opened can be followed up.',
    );
  const followed = await remoteTarget(url, taskId, forge, context);
  const head = await tryGit(
    ['rev-parse', '--verify', '--quiet', `refs/remotes/origin/agent-runner/${taskId}^{commit}`],
    {
      cwd: followed.repository.root,
    },
  );
  if (proposed.headSha === null || head.stdout.trim() !== proposed.headSha)
    throw new UserError(
      'usage',
      `${page} proposes ${proposed.headSha ?? 'no commit'}, but agent-runner/${taskId} of ${followed.repository.url} ` +
        `holds ${head.stdout.trim() || 'nothing'}: the request is not from that branch (a fork?) or it moved meanwhile. ` +
        `Give the request's repository with --repo URL, or run the follow-up again.`,
    );
  return followed;
}
