/**
 * The webhook door of `serve`, wired from the configuration: on with `forge.webhookSecret`
 * (AGENT_RUNNER_WEBHOOK_SECRET) only. A task is queued on this server's board (an event of this repository
 * only: its `deliver.remote`'s `owner/name`) or, on a node of a fleet, on the fleet's queue for the event's
 * repository. Who may write is asked of the forge with the host's token (GH_TOKEN / GITHUB_TOKEN,
 * GITLAB_TOKEN) at `deliver.apiUrl` (else the public forge). A review of a request agent-runner opened starts,
 * on a server of one repository, the same `agent-runner followup --from-review <request>` a person would run
 * (a process of its own, detached, its output in `.agent-runner/webhook-followups.log`): it reads the writers'
 * comments through the forge, reacts, runs the follow-up on the task's branch and replies; the task's lock
 * keeps two of them apart, and the review's read record lets the next one take what a refused one left. A node
 * of a fleet queues it on the fleet instead (a job of the ended task carrying the request's page), and the node
 * that takes it does the same read, reaction, follow-up and reply (src/serve/fleet-review-followup.ts). A task
 * the fleet does not have (started by `run --pr` or the Action) is adopted: its row gets the event's repository,
 * as an issue's task does, and the node rebuilds it from the remote's state ref (src/serve/fleet-adopt.ts).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/schema.js';
import { isIssueNumber, type FleetDelivery } from '../control/task-queue-options.js';
import { hostRemoteUrl } from '../deliver/push.js';
import { FileDeliveryStore, type DeliveryStore } from '../forge-events/delivery-store.js';
import { githubAccess, gitlabAccess, webBase } from '../forge-events/dispatch.js';
import type { WebhookFollowup, WebhookOptions, WebhookTask } from '../forge-events/webhook-routes.js';
import type { Redaction } from '../notes/redact.js';
import { forgeToken } from '../remote/remote-credentials.js';
import { forgeOf } from '../remote/remote-url.js';
import type { Enqueue } from '../serve/http-api.js';
import type { StartTaskRequest } from '../serve/api-schemas.js';
import type { TaskBoard } from '../serve/task-board.js';
import { PACKAGE_ROOT } from '../version.js';
import { assertValidTaskId } from '../workspace/layout.js';

export async function webhookOptions(
  config: Config,
  repoRoot: string,
  context: { env: NodeJS.ProcessEnv; redaction: Redaction },
  /** The local board (a server without a fleet). */
  board: Pick<TaskBoard, 'start'>,
  /** A node of a fleet: its queue and the deliveries it has taken. */
  fleet: {
    api: { enqueue: Enqueue; enqueueReviewFollowup: (followup: WebhookFollowup) => Promise<unknown> };
    deliveries: DeliveryStore;
  } | null,
): Promise<WebhookOptions | undefined> {
  const secret = config.forge.webhookSecret;
  if (secret === undefined) return undefined;
  context.redaction.add([secret]);
  const apiUrl = config.deliver.apiUrl;
  const remote = fleet ? null : await hostRemoteUrl(repoRoot, config.deliver.remote).catch(() => null);
  const named = config.deliver.forge === 'auto' ? null : config.deliver.forge;
  const forge = remote ? forgeOf(remote, named) : named;
  return {
    secret,
    settings: {
      label: config.forge.label,
      trigger: config.review.trigger,
      ...(config.forge.assignee !== undefined ? { assignee: config.forge.assignee } : {}),
    },
    deliveries: fleet?.deliveries ?? new FileDeliveryStore(path.join(repoRoot, '.agent-runner')),
    access: (event, signal) =>
      event.forge === 'github'
        ? githubAccess({
            api: apiUrl ?? 'https://api.github.com',
            repository: event.repository.fullName,
            ...tokenOf('github', context.env),
            signal,
          })
        : gitlabAccess({
            api: apiUrl ?? 'https://gitlab.com',
            projectId: Number(event.repository.projectId),
            ...tokenOf('gitlab', context.env),
            signal,
          }),
    ...(apiUrl !== undefined ? { apiUrl } : {}),
    ...(forge ? { forgeWeb: webBase(forge, apiUrl) } : {}),
    // A server on one repository takes only that repository's events (no remote: none matches).
    ...(fleet ? {} : { repository: remote?.path ?? '' }),
    queueTask: async (task) =>
      fleet
        ? fleet.api.enqueue({ repo: task.repo, prd: task.prd, deliver: webhookDelivery(task) })
        : board.start(boardTask(task), { deliver: true }),
    startFollowup: fleet
      ? async (followup) => {
          await fleet.api.enqueueReviewFollowup(followup);
        }
      : (followup) => startReviewFollowup(repoRoot, followup, context.env),
  };
}

/**
 * A webhook's task on this server's board: delivered once it ends, as `run --pr` is, and an issue's task as
 * `run --closes N` (the request's body closes the issue, which gets a reply with the request and the outcome).
 * The number is the event's, checked as one; `deliver.when` stays the owner's.
 */
export function boardTask(task: Pick<WebhookTask, 'prd' | 'origin'>): StartTaskRequest {
  return { prd: task.prd, config: { deliver: webhookDelivery(task) } };
}

/**
 * What a webhook's task asks of its delivery, on one server or a fleet: a request, closing the issue the task
 * came from (its number checked as one: a positive safe integer); nothing else of the event's text.
 */
export function webhookDelivery(task: Pick<WebhookTask, 'origin'>): FleetDelivery {
  const issue = Number(task.origin.issue);
  return task.origin.request === undefined && isIssueNumber(issue)
    ? { pr: true, closes: issue }
    : { pr: true };
}

/** `agent-runner followup --from-review <request>` in the repository, detached from the server's request. */
async function startReviewFollowup(
  repoRoot: string,
  followup: WebhookFollowup,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  assertValidTaskId(followup.taskId);
  const stateDir = path.join(repoRoot, '.agent-runner');
  await mkdir(stateDir, { recursive: true });
  const log = openSync(path.join(stateDir, 'webhook-followups.log'), 'a');
  const bin = path.join(PACKAGE_ROOT, 'bin', 'agent-runner.js');
  const child = spawn(process.execPath, [bin, 'followup', '--from-review', followup.requestUrl], {
    cwd: repoRoot,
    env,
    detached: true,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  child.unref();
}

function tokenOf(forge: 'github' | 'gitlab', env: NodeJS.ProcessEnv): { token?: string } {
  const found = forgeToken(forge, env);
  return found ? { token: found.token } : {};
}
