/**
 * The routes of who may do what: the caller's own name and role (the page shows them, and offers only what
 * the role allows), the audit log, and the named tokens (listed without their secrets; a new one is answered
 * once, then only its hash is kept).
 */
import type { AuditLog } from '../identity/audit-entry.js';
import { parseSince } from '../identity/audit-since.js';
import { tokenNameSchema } from '../identity/roles.js';
import type { TokenStore } from '../identity/token-store.js';
import { apiError, body } from './api-answers.js';
import { route, type ApiApp, type AuditSinks } from './api-auth.js';
import { createTokenSchema } from './api-schemas.js';

export function registerAdminRoutes(
  app: ApiApp,
  sinks: AuditSinks,
  stores: { tokens?: TokenStore; audit?: AuditLog },
): void {
  route(app, 'GET /api/whoami', sinks, (c) => c.json(c.get('actor')));

  route(app, 'GET /api/audit', sinks, async (c) => {
    const given = c.req.query('since');
    const since = given === undefined ? undefined : parseSince(given);
    if (since === null)
      return apiError(
        c,
        400,
        'invalid_field',
        'since: give a duration (90m, 12h, 7d) or an ISO time.',
        'since',
      );
    const entries = (await stores.audit?.list(since ? { since } : {})) ?? [];
    return c.json({ entries });
  });

  const noStore = () =>
    'This server keeps no named tokens (it was started without a state directory or control database).';

  route(app, 'GET /api/tokens', sinks, async (c) => {
    if (stores.tokens === undefined) return apiError(c, 409, 'no_token_store', noStore());
    return c.json({ tokens: await stores.tokens.list() });
  });

  route(app, 'POST /api/tokens', sinks, async (c) => {
    if (stores.tokens === undefined) return apiError(c, 409, 'no_token_store', noStore());
    const checked = await body(c, createTokenSchema);
    if ('answer' in checked) return checked.answer;
    c.set('auditTokenName', checked.value.name);
    const created = await stores.tokens.create(checked.value.name, checked.value.role);
    // The one time the token is shown: the caller keeps it; the store keeps its hash.
    return c.json({ token: created.token, ...created.record }, 201);
  });

  route(app, 'POST /api/tokens/:name/revoke', sinks, async (c) => {
    if (stores.tokens === undefined) return apiError(c, 409, 'no_token_store', noStore());
    const name = tokenNameSchema.safeParse(c.req.param('name'));
    if (!name.success)
      return apiError(c, 400, 'invalid_field', `name: ${name.error.issues[0]?.message}`, 'name');
    c.set('auditTokenName', name.data);
    const revoked = await stores.tokens.revoke(name.data);
    if (revoked === null)
      return apiError(c, 404, 'not_found', `No token named ${name.data} that is not revoked.`);
    return c.json(revoked);
  });
}
