/**
 * A webhook on a fleet, against the real PostgreSQL (a database of this file's own, no Docker): two nodes'
 * APIs (each on a real socket, each with its own pool as the node role, wired by serve's own
 * webhookOptions) get the same signed delivery of GitHub's published `issues.labeled` example; one queues the
 * task, the other answers 409, the fleet has one task, and a node takes it and runs it (through a runner that
 * implements the node's port and records: the sandbox and the model are the e2e's). Who may write is asked of
 * the scripted GitHub server (checked against GitHub's OpenAPI description).
 */
import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newTaskId } from '../../src/app.js';
import { webhookOptions } from '../../src/cli/serve-webhooks.js';
import { validateConfig } from '../../src/config/load.js';
import type { ControlDatabase } from '../../src/control/control-database.js';
import { FleetNode } from '../../src/control/fleet-node.js';
import { enqueueTask, startQueueClient } from '../../src/control/task-queue.js';
import { ControlDeliveryStore } from '../../src/control/webhook-deliveries.js';
import { ControlAuditLog } from '../../src/control/control-tokens.js';
import { Redaction } from '../../src/notes/redact.js';
import {
  migratedTestDatabase,
  RecordingRunner,
  type MigratedTestDatabase,
} from '../support/control-database.js';
import { createDemoRepo } from '../support/demo-task.js';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';
import { startTokenServer, type TokenServer } from '../support/token-server.js';
import { example } from '../support/webhook-examples.js';

const SECRET = 'fleet-webhook-secret-0123456789';
let fleet: MigratedTestDatabase;
let github: ScriptedGitHubServer;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  fleet = await migratedTestDatabase();
  github = await new ScriptedGitHubServer().start();
  github.review.permissions.set('Codertocat', 'admin');
}, 600_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await github?.stop();
  await fleet?.close();
});

function nodeDatabase(): Promise<ControlDatabase> {
  return fleet.node();
}

/** One node's API with its webhooks wired as `serve --control` wires them. */
async function nodeApi(id: string): Promise<TokenServer> {
  const database = await nodeDatabase();
  const boss = await startQueueClient(database);
  stops.push(() => boss.stop({ graceful: false, wait: true }));
  const repo = createDemoRepo('');
  stops.push(async () => repo.remove());
  const config = validateConfig([
    { source: 'test', values: { forge: { webhookSecret: SECRET }, deliver: { apiUrl: github.url } } },
  ]);
  const enqueue = async (request: { repo: string; prd: string }) => {
    const taskId = newTaskId(request.prd);
    await enqueueTask(database, boss, { taskId, repoUrl: request.repo, prd: request.prd });
    return taskId;
  };
  const webhooks = await webhookOptions(
    config,
    repo.dir,
    { env: { GITHUB_TOKEN: 'ghs_node_token' }, redaction: new Redaction() },
    { start: async () => Promise.reject(new Error('a node of a fleet queues, it starts nothing here')) },
    { api: { enqueue }, deliveries: new ControlDeliveryStore(database) },
  );
  const server = await startTokenServer(repo.dir, {
    audit: new ControlAuditLog(database),
    extra: { nodeId: () => id, ...(webhooks ? { webhooks } : {}) },
  });
  stops.push(() => server.close());
  return server;
}

it('one delivery to two nodes: one task on the fleet, which a node takes; audited with the forge user', async () => {
  const [a, b] = [await nodeApi('node-a'), await nodeApi('node-b')];
  const payload = example('issues', 'labeled');
  payload.label.name = 'agent-runner';
  payload.issue.title = 'Add a slugify helper';
  payload.issue.body = 'Write slugify(text): lower case, dashes.';
  const body = JSON.stringify(payload);
  const headers = {
    'content-type': 'application/json',
    'x-github-event': 'issues',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
  };
  const answers = await Promise.all(
    [a, b].map(async (server) => {
      const response = await fetch(`${server.url}/api/webhooks/github`, { method: 'POST', headers, body });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    }),
  );
  expect(answers.map((answer) => answer.status).sort()).toEqual([202, 409]);
  const taken = answers.find((answer) => answer.status === 202)?.body;
  const client = fleet.admin;
  const rows = await client.pool.query<{ id: string; repo_url: string; prd: string; state: string }>(
    'SELECT id, repo_url, prd, state FROM agent_runner.tasks',
  );
  expect(rows.rows).toHaveLength(1);
  expect(rows.rows[0]).toMatchObject({
    id: taken?.taskId,
    repo_url: 'https://github.com/Codertocat/Hello-World.git',
    state: 'QUEUED',
  });
  expect(rows.rows[0]?.prd).toContain('Write slugify(text)');
  const deliveries = await client.pool.query(
    'SELECT forge, delivery_id FROM agent_runner.webhook_deliveries',
  );
  expect(deliveries.rows).toEqual([{ forge: 'github', delivery_id: headers['x-github-delivery'] }]);
  const audit = await new ControlAuditLog(client).list();
  expect(audit.filter((entry) => entry.action === 'webhook.task')).toEqual([
    expect.objectContaining({
      actor: { name: 'github:Codertocat', role: 'operator' },
      taskId: taken?.taskId,
    }),
  ]);

  const runner = new RecordingRunner();
  const database = await nodeDatabase();
  const boss = await startQueueClient(database);
  const node = new FleetNode(database, boss, runner, { id: 'node-c', capacity: 1, pollMs: 200 });
  await node.start();
  const deadline = Date.now() + 30_000;
  while (runner.ran.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  await node.stop();
  await boss.stop({ graceful: false, wait: true });
  expect(runner.ran.map((task) => task.taskId)).toEqual([taken?.taskId]);
  expect(runner.ran[0]?.prd).toContain('Add a slugify helper');
  // The permission was asked with the node's token, as GitHub documents the call.
  expect(github.calls.filter((call) => call.operation === 'permission').length).toBeGreaterThanOrEqual(1);
  github.assertValid();
}, 120_000);
