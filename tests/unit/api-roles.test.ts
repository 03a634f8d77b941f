/**
 * Who may call what, on a real server (the same HTTP stack as `serve`) over a real repository: every route of
 * the route table × every role, generated from the table: a role below the route's gets 403 with a JSON error
 * naming the role it needs, one at or above gets past the guard (the handler's own answer: 200, 202, 400 or
 * 404, never 401 or 403), no token, an unknown one, a wrong secret or a revoked token get 401. The server
 * registers no /api route outside the table, and the OpenAPI document states each route's role.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLES, type Role } from '../../src/identity/roles.js';
import { API_ROUTES, WEBHOOK_ROUTES, openApiPath } from '../../src/serve/api-routes.js';
import { createApi } from '../../src/serve/http-api.js';
import { openApiDocument } from '../../src/serve/openapi.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { createApp } from '../../src/app.js';
import { Redaction } from '../../src/notes/redact.js';
import { createDemoRepo } from '../support/demo-task.js';
import { call, startTokenServer, type TokenServer } from '../support/token-server.js';

let repo: { dir: string; remove: () => void };
let server: TokenServer;
const tokenOf = {} as Record<Role, string>;

beforeAll(async () => {
  repo = createDemoRepo('');
  server = await startTokenServer(repo.dir);
  for (const role of ROLES) tokenOf[role] = (await server.tokens.create(`${role}-1`, role)).token;
});

afterAll(async () => {
  await server?.close();
  repo?.remove();
});

/** The roles' order, written here (not taken from the code under test): viewer < operator < admin. */
const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** A call that passes the guard but changes nothing: unknown task or token, or a body the handler refuses. */
function harmless(route: (typeof API_ROUTES)[number]): { path: string; body?: unknown } {
  const path = route.path.replace(':id', 'no-such-task').replace(':name', 'nobody');
  if (route.method === 'GET') return { path };
  // A body each POST handler refuses (400) or an unknown target (404): nothing starts, nothing is created.
  return { path, body: { unexpected: true } };
}

describe('each route × each role', () => {
  it.each(
    API_ROUTES.flatMap((route) =>
      ROLES.map((role) => [`${route.method} ${route.path}`, role, route] as const),
    ),
  )('%s as %s', async (_name, role, route) => {
    const { path, body } = harmless(route);
    const answer = await call(server.url, route.method, path, tokenOf[role], body);
    if (RANK[role] >= RANK[route.role]) {
      expect(answer.status, answer.text).not.toBe(401);
      expect(answer.status, answer.text).not.toBe(403);
      expect(answer.status, answer.text).toBeLessThan(500);
    } else {
      expect(answer.status).toBe(403);
      expect(answer.body).toMatchObject({ error: { code: 'forbidden' } });
      const message = (answer.body?.error as { message: string }).message;
      expect(message).toContain(`needs the ${route.role} role`);
      expect(message).toContain(`has ${role}`);
    }
  });

  it.each(API_ROUTES.map((route) => [`${route.method} ${route.path}`, route] as const))(
    '%s without a token, with an unknown one or a wrong secret: 401',
    async (_name, route) => {
      const { path, body } = harmless(route);
      const wrongSecret = tokenOf.admin.slice(0, -4) + (tokenOf.admin.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      for (const token of [null, 'art_000000000000_' + 'x'.repeat(43), wrongSecret, 'not-a-token']) {
        const answer = await call(server.url, route.method, path, token, body);
        expect(answer.status).toBe(401);
        expect(answer.body).toMatchObject({ error: { code: 'unauthorized' } });
      }
    },
  );

  it("the server's own start-up token is an admin named server", async () => {
    expect((await call(server.url, 'GET', '/api/whoami', server.serverToken)).body).toEqual({
      name: 'server',
      role: 'admin',
    });
    expect((await call(server.url, 'GET', '/api/whoami', tokenOf.viewer)).body).toEqual({
      name: 'viewer-1',
      role: 'viewer',
    });
  });

  it('a revoked token is refused from the next request', async () => {
    const { token } = await server.tokens.create('leaving', 'operator');
    expect((await call(server.url, 'GET', '/api/tasks', token)).status).toBe(200);
    const revoked = await call(server.url, 'POST', '/api/tokens/leaving/revoke', tokenOf.admin);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ name: 'leaving', role: 'operator', revokedAt: expect.any(String) });
    expect((await call(server.url, 'GET', '/api/tasks', token)).status).toBe(401);
    // Listed with when it was revoked, never with its secret.
    const listed = await call(server.url, 'GET', '/api/tokens', tokenOf.admin);
    expect(listed.text).not.toContain(token.slice('art_'.length + 13));
    expect(listed.body?.tokens).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'leaving', revokedAt: expect.any(String) })]),
    );
  });
});

describe('the route table is the whole API', () => {
  it('the server registers no /api route outside the table', () => {
    const redaction = new Redaction();
    const app = createApi(new TaskBoard(repo.dir, createApp(process.env, {}, redaction), process.env), {
      token: 'x',
      redaction,
    });
    const registered = new Set(
      app.routes
        .filter(
          (entry) => entry.path.startsWith('/api/') && entry.method !== 'ALL' && entry.path !== '/api/*',
        )
        .map((entry) => `${entry.method} ${entry.path}`),
    );
    // The webhooks are in the table too, beside the token routes: they authenticate by the forge's signature.
    expect([...registered].sort()).toEqual(
      [...API_ROUTES, ...WEBHOOK_ROUTES].map((route) => `${route.method} ${route.path}`).sort(),
    );
  });

  it('the OpenAPI document states each route and the role it needs', () => {
    const paths = openApiDocument().paths as Record<string, Record<string, { 'x-required-role'?: string }>>;
    const documented = Object.entries(paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => [
        `${method.toUpperCase()} ${path}`,
        operation['x-required-role'],
      ]),
    );
    expect(documented.sort()).toEqual(
      API_ROUTES.map((route) => [`${route.method} ${openApiPath(route.path)}`, route.role]).sort(),
    );
    expect(JSON.stringify(paths['/api/tasks'])).toContain('"403"');
  });
});
