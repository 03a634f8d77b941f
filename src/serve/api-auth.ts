/**
 * Who may call what: every request to /api/ names its caller by a token (401 without a known, live one);
 * every route is registered from the route table (api-routes.ts) behind a guard that refuses a role too low
 * (403) and, for a route that changes something, writes the call to the audit log (and to the task's journal
 * when the task is this server's) once it is answered: who, what, which task, from where, how it ended.
 */
import type { IncomingMessage } from 'node:http';
import type { Context, Handler, Hono, MiddlewareHandler } from 'hono';
import type { AuditAction, AuditEntry, AuditLog } from '../identity/audit-entry.js';
import type { TokenAuthenticator } from '../identity/authenticate.js';
import { roleAllows, type Actor } from '../identity/roles.js';
import { apiError } from './api-answers.js';
import { apiRoute, type ApiRouteKey } from './api-routes.js';
import { taskIdParamSchema } from './api-schemas.js';

/** What a handler and the guard share about a request. */
export interface ApiEnv {
  Variables: {
    actor: Actor;
    /** Set by a handler whose task is not in the path (a start: the new task's id). */
    auditTaskId: string;
    /** Set by a handler that does something else than its route's action (a start queued on the fleet). */
    auditAction: AuditAction;
    /** Set by a handler acting on a token: its name. */
    auditTokenName: string;
  };
}

export type ApiApp = Hono<ApiEnv>;

/** Where the guard writes an audited call. */
export interface AuditSinks {
  log?: AuditLog;
  /** The task's journal, when this server has it (TaskBoard.recordAudit). */
  journal?: (taskId: string, entry: AuditEntry, at: string) => void;
  /** The node of a fleet that took the call. */
  node?: () => string | undefined;
  /** Where a failure to write the audit log is said (the call itself has been answered already). */
  warn?: (line: string) => void;
}

/** The caller's address as the socket tells it (a proxy in front: the proxy's; `unknown` without a socket). */
export function remoteAddress(c: Context): string {
  const env = c.env as { incoming?: IncomingMessage } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? 'unknown';
}

/** The token of a request: `Authorization: Bearer <token>`, or `?token=` (a browser's EventSource). */
function presented(c: Context): string | undefined {
  const header = c.req.header('authorization');
  return header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : c.req.query('token');
}

/** 401 unless the request names a caller; the caller is set for the guards. */
export function authenticate(authenticator: TokenAuthenticator): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const actor = await authenticator.authenticate(presented(c));
    if (actor === null)
      return apiError(
        c,
        401,
        'unauthorized',
        'Missing, unknown or revoked token: send Authorization: Bearer <token> (`serve` prints its own; ' +
          '`agent-runner token create` makes a named one).',
      );
    c.set('actor', actor);
    await next();
    return undefined;
  };
}

/** Registers one route of the table: its role checked first, its call audited when it changes something. */
export function route(app: ApiApp, key: ApiRouteKey, sinks: AuditSinks, handler: Handler<ApiEnv>): void {
  const definition = apiRoute(key);
  const guard: MiddlewareHandler<ApiEnv> = async (c, next) => {
    const actor = c.get('actor');
    if (!roleAllows(actor.role, definition.role)) {
      const refused = apiError(
        c,
        403,
        'forbidden',
        `${definition.method} ${definition.path} needs the ${definition.role} role; the token ${actor.name} ` +
          `has ${actor.role}. An admin can create one that has it: agent-runner token create --name NAME --role ${definition.role}.`,
      );
      // Who tried to change something without the role for it is audited too.
      if (definition.action !== undefined) await audit(c, definition.action, actor, sinks, 403);
      return refused;
    }
    await next();
    if (definition.action !== undefined) await audit(c, definition.action, actor, sinks, c.res.status);
    return undefined;
  };
  app.on(definition.method, definition.path, guard, handler);
}

async function audit(
  c: Context<ApiEnv>,
  action: AuditAction,
  actor: Actor,
  sinks: AuditSinks,
  status: number,
): Promise<void> {
  // A memory route's `:id` names a proposal (TASK-ID#N), not a task: its task is set by the handler.
  const onProposal = action.startsWith('memory.');
  const inPath = taskIdParamSchema.safeParse(onProposal ? undefined : c.req.param('id'));
  const taskId = c.get('auditTaskId') ?? (inPath.success ? inPath.data : undefined);
  const tokenName = c.get('auditTokenName');
  const proposalId = onProposal ? c.req.param('id')?.slice(0, 80) : undefined;
  const node = sinks.node?.();
  const at = new Date().toISOString();
  const entry: AuditEntry = {
    actor,
    action: c.get('auditAction') ?? action,
    ...(taskId !== undefined ? { taskId } : {}),
    ...(tokenName !== undefined ? { tokenName } : {}),
    ...(proposalId !== undefined ? { proposalId } : {}),
    from: remoteAddress(c),
    status,
    ...(node !== undefined ? { node } : {}),
  };
  try {
    await sinks.log?.append({ ...entry, at });
  } catch (error) {
    sinks.warn?.(`could not write the audit log: ${(error as Error).message}`);
  }
  if (taskId !== undefined && status < 300)
    try {
      sinks.journal?.(taskId, entry, at);
    } catch (error) {
      sinks.warn?.(
        `could not write the audit event to the journal of ${taskId}: ${(error as Error).message}`,
      );
    }
}
