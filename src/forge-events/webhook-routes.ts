/**
 * The forges' webhooks, a door of `serve` beside the token API: `POST /api/webhooks/github` (signed with
 * `X-Hub-Signature-256`, an HMAC-SHA256 of the body with the webhook's secret, checked by
 * @octokit/webhooks-methods in constant time) and `POST /api/webhooks/gitlab` (the secret token in
 * `X-Gitlab-Token`, compared in constant time). They authenticate by that signature, not by an API token
 * (api-routes.ts: WEBHOOK_ROUTES). A verified delivery is taken once (its id remembered: delivery-store.ts),
 * decided (dispatch.ts) and answered at once: a task is queued, never run inside the request. What was done is
 * audited with the forge user as the actor.
 *
 *   no signature, a wrong one     401, nothing read further
 *   no or malformed delivery id   400
 *   an event agent-runner ignores 400 `unknown_event` (a GitHub `ping`: 200)
 *   a delivery taken before       409 `duplicate_delivery`
 *   asks for nothing / not allowed 200 `{action: "ignore", reason}` (audited)
 *   a task                        202 `{action: "task", taskId}` (audited)
 *   a follow-up                   202 `{action: "followup", taskId, request}` (audited): started (a server on
 *                                 one repository) or queued on the fleet (a node; a task it does not have is
 *                                 adopted from the event's repository); a fleet that cannot take it (the task
 *                                 has not ended) 409 `followup_refused` (audited)
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { verify } from '@octokit/webhooks-methods';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AuditRecord } from '../identity/audit-entry.js';
import { timeoutSignal } from '../core/timeout-signal.js';
import { UserError } from '../errors.js';
import { apiError } from '../serve/api-answers.js';
import { remoteAddress, type ApiApp, type ApiEnv, type AuditSinks } from '../serve/api-auth.js';
import { WEBHOOK_ROUTES, webhookRoute, type WebhookRouteKey } from '../serve/api-routes.js';
import { DELIVERY_ID, type DeliveryStore } from './delivery-store.js';
import {
  dispatch,
  normaliseGithub,
  normaliseGitlab,
  type EventOrigin,
  type Forge,
  type ForgeAccess,
  type ForgeEvent,
} from './dispatch.js';

/** GitHub caps a payload at 25 MB. */
const MAX_PAYLOAD = 25 * 1024 * 1024;
/** A forge waits 10 s for the answer: its access checks get at most this. */
const ACCESS_TIMEOUT_MS = 5_000;

/** A task a webhook asks for, queued on the local board or the fleet. */
export interface WebhookTask {
  prd: string;
  /** The repository's clone URL, from the signed payload (a fleet clones it; the local board checks it). */
  repo: string;
  origin: EventOrigin;
  /** The or comment's web link, built from the forge's address and the event's numbers. */
  originUrl: string;
}

/** A follow-up a review asks for: the task of the request's branch `agent-runner/<ID>`. */
export interface WebhookFollowup {
  taskId: string;
  /** The request's page, built from the forge's address and the event's numbers. */
  requestUrl: string;
  /**
   * The repository's clone URL, from the signed payload as {@link WebhookTask.repo}: a fleet that does not have
   * the task adopts it from this remote's state ref (a server on one repository has its own remote).
   */
  repo: string;
}

export interface WebhookOptions {
  /** The shared secret (`forge.webhookSecret`): never logged, never in an answer. */
  secret: string;
  settings: { label?: string; trigger?: string; assignee?: string };
  deliveries: DeliveryStore;
  /** The forge's answers about the event's repository: who may write, a request's branch. */
  access: (event: Exclude<ForgeEvent, { ignore: string }>, signal: AbortSignal) => ForgeAccess;
  /** The forge's API address (`deliver.apiUrl`), for the links; undefined: the public forge. */
  apiUrl?: string;
  /**
   * The configured forge's web address (`https://github.com`, a GitHub Enterprise's or GitLab's own): the page
   * makes a link of an origin on this host only, over https.
   */
  forgeWeb?: string;
  /**
   * Starts or queues the follow-up a review asks for: `followup --from-review <request>` of the request's task,
   * which reads the review itself through the forge (writers' comments since the last read), reacts and
   * replies. Throws a UserError when it cannot be taken (a fleet's task that has not ended).
   */
  startFollowup: (followup: WebhookFollowup) => Promise<void>;
  /** Queues the task; returns its id. Throws a UserError when this server cannot take it. */
  queueTask: (task: WebhookTask) => Promise<string>;
  /** The repository this server works on (`owner/name`); a delivery for another one is ignored. */
  repository?: string;
}

/** A forge user as the audit log names them: `github:<login>`, only the characters a login can have. */
function actorName(forge: Forge, login: string | undefined): string {
  const plain = (login ?? '').replace(/[^A-Za-z0-9._-]/g, '').slice(0, 100);
  return `${forge}:${plain || 'unknown'}`;
}

function sameSecret(given: string, secret: string): boolean {
  // Digests first: equal lengths for timingSafeEqual, and the secret's length is not told by the time taken.
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(secret));
}

/** The webhook routes; without options (no secret configured) each answers 404 saying how to turn them on. */
export function registerWebhooks(app: ApiApp, options: WebhookOptions | undefined, sinks: AuditSinks): void {
  if (options === undefined) {
    for (const webhook of WEBHOOK_ROUTES)
      app.on(webhook.method, webhook.path, (c) =>
        apiError(
          c,
          404,
          'webhooks_off',
          'This server takes no webhooks: set AGENT_RUNNER_WEBHOOK_SECRET (forge.webhookSecret) and restart it.',
        ),
      );
    return;
  }
  const limit = bodyLimit({
    maxSize: MAX_PAYLOAD,
    onError: (c) => apiError(c, 413, 'payload_too_large', 'A webhook payload is at most 25 MB.'),
  });
  const post = (key: WebhookRouteKey, handler: (c: Context<ApiEnv>) => Promise<Response>) => {
    const route = webhookRoute(key);
    app.on(route.method, route.path, limit, handler);
  };
  post('POST /api/webhooks/github', async (c) => {
    const signature = c.req.header('x-hub-signature-256');
    const body = await c.req.text();
    if (!signature)
      return apiError(
        c,
        401,
        'signature_missing',
        "No X-Hub-Signature-256: set the webhook's secret on GitHub.",
      );
    if (!(await verify(options.secret, body, signature).catch(() => false)))
      return apiError(
        c,
        401,
        'signature_invalid',
        "X-Hub-Signature-256 does not match: the webhook's secret on GitHub differs from forge.webhookSecret.",
      );
    const name = c.req.header('x-github-event') ?? '';
    if (name === 'ping') return c.json({ pong: true });
    const delivery = { forge: 'github' as const, id: c.req.header('x-github-delivery'), body };
    return accept(c, delivery, (payload) => normaliseGithub(name, payload), options, sinks);
  });
  post('POST /api/webhooks/gitlab', async (c) => {
    const token = c.req.header('x-gitlab-token');
    const body = await c.req.text();
    if (!token)
      return apiError(
        c,
        401,
        'signature_missing',
        "No X-Gitlab-Token: set the webhook's secret token on GitLab.",
      );
    if (!sameSecret(token, options.secret))
      return apiError(
        c,
        401,
        'signature_invalid',
        "X-Gitlab-Token does not match: the webhook's secret token on GitLab differs from forge.webhookSecret.",
      );
    const delivery = { forge: 'gitlab' as const, id: c.req.header('x-gitlab-event-uuid'), body };
    return accept(c, delivery, normaliseGitlab, options, sinks);
  });
}

/** A verified delivery: parsed, taken once, decided, queued or ignored, audited. */
async function accept(
  c: Context<ApiEnv>,
  delivery: { forge: Forge; id: string | undefined; body: string },
  normalise: (payload: unknown) => ForgeEvent,
  options: WebhookOptions,
  sinks: AuditSinks,
): Promise<Response> {
  const { forge, id } = delivery;
  if (id === undefined || !DELIVERY_ID.test(id))
    return apiError(
      c,
      400,
      'delivery_invalid',
      `${forge === 'github' ? 'X-GitHub-Delivery' : 'X-Gitlab-Event-UUID'} is missing or not a delivery id.`,
    );
  let payload: unknown;
  try {
    payload = JSON.parse(delivery.body);
  } catch {
    return apiError(c, 400, 'payload_invalid', 'The payload is not JSON: send it as application/json.');
  }
  const event = normalise(payload);
  if ('ignore' in event) return apiError(c, 400, 'unknown_event', `${event.ignore}: nothing queued.`);
  const decided =
    options.repository !== undefined &&
    event.repository.fullName.toLowerCase() !== options.repository.toLowerCase()
      ? ({
          kind: 'ignore',
          reason: "the event is for another repository than this server's",
          refused: false,
        } as const)
      : await dispatch(
          event,
          options.settings,
          options.access(event, timeoutSignal(ACCESS_TIMEOUT_MS)),
          options.apiUrl,
        );
  const actor = { name: actorName(forge, event.sender), role: 'operator' as const };
  if (!(await options.deliveries.claim(forge, id)))
    return apiError(c, 409, 'duplicate_delivery', `Delivery ${id} was taken before: nothing queued.`);
  if (decided.kind === 'ignore') {
    await audit(c, sinks, { actor, action: 'webhook.ignore', status: 200 });
    return c.json({ action: 'ignore', reason: decided.reason, refused: decided.refused });
  }
  if (decided.kind === 'followup') {
    const { taskId, requestUrl, originUrl } = decided;
    try {
      await options.startFollowup({ taskId, requestUrl, repo: event.repository.cloneUrl });
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      // The comments stay unread in the task's review record: the next follow-up from review takes them.
      await audit(c, sinks, { actor, action: 'webhook.ignore', status: 409, taskId, origin: originUrl });
      return apiError(c, 409, 'followup_refused', `A review of ${requestUrl}: ${error.message}`);
    }
    const entry = { actor, action: 'webhook.followup' as const, status: 202, taskId, origin: originUrl };
    await audit(c, sinks, entry);
    journal(c, sinks, options, entry);
    return c.json({ action: 'followup', taskId, request: requestUrl }, 202);
  }
  const taskId = await options.queueTask({
    prd: decided.prd,
    repo: event.repository.cloneUrl,
    origin: decided.origin,
    originUrl: decided.originUrl,
  });
  const entry = { actor, action: 'webhook.task' as const, status: 202, taskId, origin: decided.originUrl };
  await audit(c, sinks, entry);
  journal(c, sinks, options, entry);
  return c.json({ action: 'task', taskId, origin: decided.originUrl }, 202);
}

/** A server on one repository has the task on its board: its journal and page show where it came from. */
function journal(
  c: Context<ApiEnv>,
  sinks: AuditSinks,
  options: WebhookOptions,
  entry: Pick<AuditRecord, 'actor' | 'action' | 'status' | 'taskId' | 'origin'> & { taskId: string },
): void {
  if (options.repository === undefined) return;
  try {
    sinks.journal?.(entry.taskId, { ...entry, from: remoteAddress(c) }, new Date().toISOString());
  } catch (error) {
    sinks.warn?.(
      `could not write the audit event to the journal of ${entry.taskId}: ${(error as Error).message}`,
    );
  }
}

async function audit(
  c: Context<ApiEnv>,
  sinks: AuditSinks,
  entry: Pick<AuditRecord, 'actor' | 'action' | 'status' | 'taskId' | 'origin'>,
): Promise<void> {
  const node = sinks.node?.();
  try {
    await sinks.log?.append({
      at: new Date().toISOString(),
      ...entry,
      from: remoteAddress(c),
      ...(node !== undefined ? { node } : {}),
    });
  } catch (error) {
    sinks.warn?.(`could not write the audit log: ${(error as Error).message}`);
  }
}
