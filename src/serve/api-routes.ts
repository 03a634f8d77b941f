/**
 * Every route of the HTTP API with the role it needs: the one table that the server registers its routes
 * from (http-api.ts refuses a route missing here), the OpenAPI document states (`x-required-role`), and the
 * tests walk (each route × each role). A route with an `action` changes something: each call to it is
 * written to the audit log.
 */
import type { AuditAction } from '../identity/audit-entry.js';
import type { Role } from '../identity/roles.js';

export interface ApiRoute {
  method: 'GET' | 'POST';
  /** Hono's path syntax (`:id`); the OpenAPI document writes `{id}`. */
  path: string;
  role: Role;
  /** What a call does, for the audit log (absent: it only reads). */
  action?: AuditAction;
}

export const API_ROUTES = [
  { method: 'GET', path: '/api/tasks', role: 'viewer' },
  { method: 'POST', path: '/api/tasks', role: 'operator', action: 'task.start' },
  { method: 'GET', path: '/api/tasks/:id', role: 'viewer' },
  { method: 'GET', path: '/api/tasks/:id/events', role: 'viewer' },
  { method: 'GET', path: '/api/tasks/:id/diff', role: 'viewer' },
  { method: 'GET', path: '/api/tasks/:id/note', role: 'viewer' },
  { method: 'POST', path: '/api/tasks/:id/answer', role: 'operator', action: 'task.answer' },
  { method: 'POST', path: '/api/tasks/:id/stop', role: 'operator', action: 'task.stop' },
  { method: 'POST', path: '/api/tasks/:id/resume', role: 'operator', action: 'task.resume' },
  { method: 'POST', path: '/api/tasks/:id/followup', role: 'operator', action: 'task.followup' },
  { method: 'GET', path: '/api/whoami', role: 'viewer' },
  { method: 'GET', path: '/api/openapi.json', role: 'viewer' },
  { method: 'GET', path: '/api/audit', role: 'admin' },
  { method: 'GET', path: '/api/tokens', role: 'admin' },
  { method: 'POST', path: '/api/tokens', role: 'admin', action: 'token.create' },
  { method: 'POST', path: '/api/tokens/:name/revoke', role: 'admin', action: 'token.revoke' },
  { method: 'GET', path: '/api/memory', role: 'viewer' },
  { method: 'POST', path: '/api/memory/proposals/:id/accept', role: 'operator', action: 'memory.accept' },
  { method: 'POST', path: '/api/memory/proposals/:id/reject', role: 'operator', action: 'memory.reject' },
] as const satisfies readonly ApiRoute[];

/**
 * The forges' webhooks: they authenticate by the forge's signature with the webhook secret, not by an API
 * token (src/forge-events/webhook-routes.ts), so they carry no role; each accepted delivery is audited with
 * the forge user as the actor.
 */
export const WEBHOOK_ROUTES = [
  { method: 'POST', path: '/api/webhooks/github', auth: 'signature' },
  { method: 'POST', path: '/api/webhooks/gitlab', auth: 'signature' },
] as const satisfies readonly { method: 'POST'; path: string; auth: 'signature' }[];

export type WebhookRouteKey =
  `${(typeof WEBHOOK_ROUTES)[number]['method']} ${(typeof WEBHOOK_ROUTES)[number]['path']}`;

export function webhookRoute(key: WebhookRouteKey): (typeof WEBHOOK_ROUTES)[number] {
  const route = WEBHOOK_ROUTES.find((candidate) => `${candidate.method} ${candidate.path}` === key);
  if (route === undefined) throw new Error(`No webhook route ${key} in the route table`);
  return route;
}

/** A route of the table, by method and path. */
type TableRoute = (typeof API_ROUTES)[number];
export type ApiRouteKey = TableRoute extends infer R
  ? R extends { method: infer M extends string; path: infer P extends string }
    ? `${M} ${P}`
    : never
  : never;

export function apiRoute(key: ApiRouteKey): ApiRoute {
  const route = API_ROUTES.find((candidate) => `${candidate.method} ${candidate.path}` === key);
  if (route === undefined) throw new Error(`No API route ${key} in the route table`);
  return route;
}

/** The OpenAPI form of a Hono path: `/api/tasks/:id` → `/api/tasks/{id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z]+)/g, '{$1}');
}
