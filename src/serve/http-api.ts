/**
 * The server's HTTP API (Hono): every request carries the server's token (`Authorization: Bearer <token>`,
 * or `?token=` for a browser's EventSource); bodies are checked by the zod schemas the OpenAPI document is
 * made from; every answer and event passes the process's redaction point. Errors are JSON:
 * `{"error": {"code", "message", "field"?}}`.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Hono } from 'hono';
import { UserError } from '../errors.js';
import type { Redaction } from '../notes/redact.js';
import { PACKAGE_ROOT } from '../version.js';
import type { FleetDelivery } from '../control/task-queue-options.js';
import type { AuditLog } from '../identity/audit-entry.js';
import { TokenAuthenticator } from '../identity/authenticate.js';
import type { TokenStore } from '../identity/token-store.js';
import { apiError, body, named } from './api-answers.js';
import { authenticate, route, type ApiApp, type ApiEnv, type AuditSinks } from './api-auth.js';
import { registerAdminRoutes } from './admin-routes.js';
import { registerMemoryRoutes } from './memory-routes.js';
import { startTaskSchema } from './api-schemas.js';
import { openApiDocument } from './openapi.js';
import { registerEvents, type FleetTaskSource } from './event-routes.js';
import { registerTaskActions, type EnqueueFollowup } from './task-action-routes.js';
import { registerTaskList, type FleetTaskList } from './task-list-route.js';
export type { FleetTaskSource } from './event-routes.js';
import { RequestFieldError } from './repository-path.js';
import { NotServedError, TaskNotFoundError } from './board-errors.js';
import type { TaskBoard } from './task-board.js';
import type { BoardTask, TaskDetail, TaskPage } from './board-view.js';
import { registerWebhooks, type WebhookOptions } from '../forge-events/webhook-routes.js';

/** The web view's files: route, file below the package root, content type. */
const WEB_FILES: readonly (readonly [string, string, string])[] = [
  ['/', 'web/index.html', 'text/html; charset=utf-8'],
  ['/app.css', 'web/app.css', 'text/css; charset=utf-8'],
  ['/app.js', 'dist/web/app.js', 'text/javascript; charset=utf-8'],
];

/** A task's detail: this server's, else (a node of a fleet) another node's task from the database. */
function registerDetail(
  app: ApiApp,
  board: TaskBoard,
  options: { redaction: Redaction; fleetTask?: FleetTaskSource; sinks: AuditSinks; forgeWeb?: string },
): void {
  route(app, 'GET /api/tasks/:id', options.sinks, async (c) => {
    const task = named(c);
    if ('answer' in task) return task.answer;
    const detail = await board.detail(task.taskId);
    const page = (found: BoardTask & TaskDetail): TaskPage => ({
      ...found,
      forgeWeb: options.forgeWeb ?? null,
    });
    if (detail !== null) return c.json(options.redaction.value(page(detail)));
    const fleet = await options.fleetTask?.detail(task.taskId);
    if (fleet) return c.json(options.redaction.value(fleet));
    return apiError(c, 404, 'not_found', `No task ${task.taskId} in this repository.`);
  });
}

/** Queues a task on the fleet; returns its id. */
export type Enqueue = (request: {
  taskId?: string;
  repo: string;
  prd: string;
  base?: string;
  /** Delivered by the node that ends it (a webhook's task from an issue); never from an API client. */
  deliver?: FleetDelivery;
}) => Promise<string>;

/** The web view: static files of the package (the page asks for its data with the token). */
function registerWebView(app: ApiApp): void {
  for (const [path_, file, type] of WEB_FILES)
    app.get(path_, async (c) => {
      const content = await readFile(path.join(PACKAGE_ROOT, file)).catch(() => null);
      if (content === null) return c.text(`${file} is missing: run npm run build`, 500);
      return c.body(content, 200, { 'content-type': type, 'cache-control': 'no-cache' });
    });
}

/** Starting a task: here, or (a body naming `repo`, on a node of a fleet) queued on the fleet. */
function registerStart(app: ApiApp, board: TaskBoard, enqueue: Enqueue | undefined, sinks: AuditSinks): void {
  route(app, 'POST /api/tasks', sinks, async (c) => {
    const checked = await body(c, startTaskSchema);
    if ('answer' in checked) return checked.answer;
    const { repo, ...request } = checked.value;
    if (repo !== undefined) {
      if (enqueue === undefined)
        return apiError(
          c,
          400,
          'invalid_field',
          'repo: only a server started with --control queues tasks.',
          'repo',
        );
      if (request.prd === undefined)
        return apiError(c, 400, 'invalid_field', 'prd: a queued task needs the PRD as text.', 'prd');
      c.set('auditAction', 'task.queue');
      const taskId = await enqueue({
        repo,
        prd: request.prd,
        ...(request.taskId !== undefined ? { taskId: request.taskId } : {}),
        ...(request.base !== undefined ? { base: request.base } : {}),
      });
      c.set('auditTaskId', taskId);
      return c.json({ taskId, queued: true }, 202);
    }
    const taskId = await board.start(request);
    c.set('auditTaskId', taskId);
    return c.json({ taskId }, 202);
  });
}

/** What the server is given: its tokens, its audit log, its redaction point, the fleet behind it. */
export interface ApiOptions {
  /** The server's own start-up token: an admin named `server`. */
  token: string;
  /** Named tokens (a file of the state directory, or the control database's table). */
  tokens?: TokenStore;
  /** Where every call that changes something is written. */
  audit?: AuditLog;
  redaction: Redaction;
  onRequest?: () => void;
  /** Where a problem the caller is not told of (the audit log could not be written) is said. */
  warn?: (line: string) => void;
  /** The node's id of a fleet, for the audit log. */
  nodeId?: () => string | undefined;
  /** A node of a fleet (`serve --control`): a task naming `repo` is queued there; returns its id. */
  enqueue?: Enqueue;
  /** A node of a fleet: a page of the fleet's tasks with their nodes, added to the list as `fleet`. */
  fleetTasks?: FleetTaskList;
  /** A node of a fleet: a task another node runs, served from the control database. */
  fleetTask?: FleetTaskSource;
  /** The forges' webhooks (a webhook secret is configured): how deliveries are checked and queued. */
  webhooks?: WebhookOptions;
  /** A node of a fleet: a follow-up of a task of the fleet is queued there. */
  enqueueFollowup?: EnqueueFollowup;
}

export function createApi(board: TaskBoard, options: ApiOptions): ApiApp {
  const app = new Hono<ApiEnv>();
  const sinks: AuditSinks = {
    ...(options.audit ? { log: options.audit } : {}),
    journal: (taskId, entry, at) => board.recordAudit(taskId, entry, at),
    ...(options.nodeId ? { node: options.nodeId } : {}),
    ...(options.warn ? { warn: options.warn } : {}),
  };
  const authenticator = new TokenAuthenticator({
    serverToken: options.token,
    ...(options.tokens ? { store: options.tokens } : {}),
  });

  app.use('/api/*', async (c, next) => {
    options.onRequest?.();
    await next();
  });
  // The webhooks authenticate by the forge's signature, so they come before the token check.
  registerWebhooks(app, options.webhooks, sinks);
  app.use('/api/*', authenticate(authenticator));

  app.onError((error, c) => {
    if (error instanceof NotServedError) return apiError(c, 409, 'not_served', error.message);
    if (error instanceof TaskNotFoundError) return apiError(c, 404, 'not_found', error.message);
    // A path or key the client may not name: 400 naming the field, as a bad body is.
    if (error instanceof RequestFieldError)
      return apiError(c, 400, 'invalid_field', options.redaction.redact(error.message), error.field);
    if (error instanceof UserError)
      return apiError(c, 400, error.code, options.redaction.redact(error.message));
    return apiError(c, 500, 'internal', options.redaction.redact(error.message));
  });

  route(app, 'GET /api/openapi.json', sinks, (c) => c.json(openApiDocument()));

  registerTaskList(app, board, { redaction: options.redaction, sinks, fleetTasks: options.fleetTasks });
  registerStart(app, board, options.enqueue, sinks);
  const forgeWeb = options.webhooks?.forgeWeb;
  registerDetail(app, board, { ...options, sinks, ...(forgeWeb !== undefined ? { forgeWeb } : {}) });
  registerTaskActions(app, board, options.fleetTask, sinks, options.enqueueFollowup);
  registerEvents(app, board, { ...options, sinks });

  route(app, 'GET /api/tasks/:id/diff', sinks, async (c) => {
    const task = named(c);
    if ('answer' in task) return task.answer;
    const diff = await board.diff(task.taskId);
    if (diff === null)
      return apiError(c, 404, 'not_found', `Task ${task.taskId} has no branch to compare yet.`);
    return c.text(options.redaction.redact(diff), 200, { 'content-type': 'text/plain; charset=utf-8' });
  });

  route(app, 'GET /api/tasks/:id/note', sinks, async (c) => {
    const task = named(c);
    if ('answer' in task) return task.answer;
    const note = await readFile(board.notePath(task.taskId), 'utf8').catch(() => null);
    if (note === null) return apiError(c, 404, 'not_found', `Task ${task.taskId} has no note yet.`);
    return c.text(options.redaction.redact(note), 200, { 'content-type': 'text/markdown; charset=utf-8' });
  });

  registerMemoryRoutes(app, sinks, {
    repoRoot: board.repoRoot,
    env: board.env,
    redaction: options.redaction,
  });

  registerAdminRoutes(app, sinks, {
    ...(options.tokens ? { tokens: options.tokens } : {}),
    ...(options.audit ? { audit: options.audit } : {}),
  });

  app.all('/api/*', (c) => apiError(c, 404, 'not_found', `No route ${c.req.method} ${c.req.path}.`));
  registerWebView(app);
  return app;
}
