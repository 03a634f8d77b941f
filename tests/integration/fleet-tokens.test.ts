/**
 * Named tokens and the audit log of a fleet, on a real PostgreSQL (a database of this file's own): two nodes'
 * APIs (each on a real socket, each with its own connection pool as the node role) read the same tokens, so a
 * token made with `agent-runner token create --control` works on both, and one revoked on node A (through its
 * API) or with `token revoke --control` is refused by the very next request on node B. Every change, from
 * either node or the command, is one log in the database, with who, from where and on which node; no token
 * is written to any table (the probe first finds one planted there).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ControlAuditLog, ControlTokenStore } from '../../src/control/control-tokens.js';
import { controlUrl } from '../../src/control/control-url.js';
import { openControlDatabase, type ControlDatabase } from '../../src/control/control-database.js';
import { migrateControl } from '../../src/control/migrate-control.js';
import { Redaction } from '../../src/notes/redact.js';
import { runCliCaptured } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/control-database.js';
import { createDemoRepo } from '../support/demo-task.js';
import { call, startTokenServer, type TokenServer } from '../support/token-server.js';

let db: TestDatabase;
let admin: ControlDatabase;
const pools: ControlDatabase[] = [];
const servers: TokenServer[] = [];
const repos: { remove: () => void }[] = [];

async function node(id: string): Promise<TokenServer> {
  const pool = await openControlDatabase(controlUrl(db.nodeUrl, new Redaction()));
  pools.push(pool);
  const repo = createDemoRepo('');
  repos.push(repo);
  const server = await startTokenServer(repo.dir, {
    tokens: new ControlTokenStore(pool),
    audit: new ControlAuditLog(pool),
    extra: { nodeId: () => id },
  });
  servers.push(server);
  return server;
}

async function cli(argv: string[]) {
  return runCliCaptured([...argv, '--control', db.nodeUrl], { env: { PATH: process.env.PATH } });
}

beforeAll(async () => {
  db = await createTestDatabase();
  admin = await openControlDatabase(controlUrl(db.url, new Redaction()));
  await migrateControl(admin, { nodePassword: db.nodePassword });
}, 600_000);

afterAll(async () => {
  for (const server of servers) await server.close();
  for (const pool of pools) await pool.close();
  for (const repo of repos) repo.remove();
  await admin?.close();
  await db?.drop();
});

it('a token works on every node, and a revoke on one is refused by the next request on the other', async () => {
  const [a, b] = [await node('node-a'), await node('node-b')];
  const carol = await cli(['token', 'create', '--name', 'carol', '--role', 'operator']);
  expect(carol.exitCode, carol.stderr).toBe(0);
  const carolToken = carol.stdout.trim();
  const rootToken = (await cli(['token', 'create', '--name', 'root', '--role', 'admin'])).stdout.trim();
  const daveToken = (await cli(['token', 'create', '--name', 'dave', '--role', 'viewer'])).stdout.trim();
  // The same name twice while the first is live: refused, saying how to go on.
  const again = await cli(['token', 'create', '--name', 'carol', '--role', 'viewer']);
  expect(again.exitCode).toBe(2);
  expect(again.stderr).toContain('A token named carol exists already');

  for (const server of [a, b]) {
    expect((await call(server.url, 'GET', '/api/whoami', carolToken)).body).toEqual({
      name: 'carol',
      role: 'operator',
    });
    expect((await call(server.url, 'GET', '/api/tasks', daveToken)).status).toBe(200);
    // A role too low, on either node: 403.
    expect((await call(server.url, 'POST', '/api/tasks/X-1/stop', daveToken)).status).toBe(403);
  }

  // Revoked through node A's API: node B refuses it from its next request (it has it checked already).
  expect((await call(a.url, 'POST', '/api/tokens/carol/revoke', rootToken)).status).toBe(200);
  expect((await call(b.url, 'GET', '/api/tasks', carolToken)).status).toBe(401);
  expect((await call(a.url, 'GET', '/api/tasks', carolToken)).status).toBe(401);
  // Revoked with the command, straight in the database: the same, on both.
  expect((await cli(['token', 'revoke', 'dave'])).exitCode).toBe(0);
  for (const server of [a, b])
    expect((await call(server.url, 'GET', '/api/tasks', daveToken)).status).toBe(401);
  expect((await cli(['token', 'revoke', 'dave'])).exitCode).toBe(2);

  // One log for the fleet: the command's changes and both nodes' calls, with who, from where, which node.
  const entries = (await call(b.url, 'GET', '/api/audit', rootToken)).body?.entries as Record<
    string,
    unknown
  >[];
  const summary = entries.map((entry) => [
    entry.action,
    (entry.actor as { name: string }).name,
    entry.tokenName ?? entry.taskId,
    entry.from,
    entry.status,
    entry.node ?? null,
  ]);
  expect(summary).toEqual([
    ['token.create', expect.stringMatching(/^cli:/), 'carol', 'cli', 200, null],
    ['token.create', expect.stringMatching(/^cli:/), 'root', 'cli', 200, null],
    ['token.create', expect.stringMatching(/^cli:/), 'dave', 'cli', 200, null],
    ['task.stop', 'dave', 'X-1', '127.0.0.1', 403, 'node-a'],
    ['task.stop', 'dave', 'X-1', '127.0.0.1', 403, 'node-b'],
    ['token.revoke', 'root', 'carol', '127.0.0.1', 200, 'node-a'],
    ['token.revoke', expect.stringMatching(/^cli:/), 'dave', 'cli', 200, null],
  ]);
  const printed = await cli(['audit', '--json', '--since', '10m']);
  expect(printed.stdout.trim().split('\n')).toHaveLength(entries.length);
  const listed = JSON.parse((await cli(['token', 'list', '--json'])).stdout) as {
    tokens: { name: string; lastUsedAt: string | null; revokedAt: string | null }[];
  };
  expect(
    listed.tokens.map((token) => [token.name, token.revokedAt !== null, token.lastUsedAt !== null]),
  ).toEqual([
    ['carol', true, true],
    ['root', false, true],
    ['dave', true, true],
  ]);

  // The probe: every row of every table of the control schema, as text. It first finds a planted token.
  const secrets = [carolToken, rootToken, daveToken].flatMap((token) => [token, token.slice(17)]);
  const leaks = async () => {
    const found: string[] = [];
    for (const table of await tables()) {
      const { rows } = await admin.pool.query<{ row: string }>(
        `SELECT t::text AS row FROM agent_runner.${table} t`,
      );
      for (const { row } of rows) if (secrets.some((secret) => row.includes(secret))) found.push(table);
    }
    return found;
  };
  expect(await tables()).toEqual(expect.arrayContaining(['api_tokens', 'audit', 'events', 'task_requests']));
  await admin.pool.query(
    `INSERT INTO agent_runner.audit (actor_name, actor_role, action, remote, status) VALUES ('x', 'admin', 'task.stop', $1, 0)`,
    [rootToken.slice(17)],
  );
  expect(await leaks()).toEqual(['audit']);
  await admin.pool.query(`DELETE FROM agent_runner.audit WHERE status = 0`);
  expect(await leaks()).toEqual([]);
}, 120_000);

async function tables(): Promise<string[]> {
  const { rows } = await admin.pool.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = 'agent_runner'`,
  );
  return rows.map((row) => row.table_name);
}
