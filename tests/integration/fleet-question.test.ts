/**
 * A task waiting on its question on node B, seen from node A, on the real PostgreSQL: node B's journal (the real
 * EventJournal) copied by copyJournalToDatabase under its lease, node A's API as `serve --control` wires it
 * (its own repository's board, the fleet's list and tasks from the database) behind a real HTTP server. The
 * question shows in A's `GET /api/tasks` (`fleet`), the task's detail and `agent-runner logs --server A`, and
 * is gone from all three once the journal says it was answered.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { SERVER_TOKEN_VARIABLE, logsCommand } from '../../src/cli/client-commands.js';
import { safeOutput } from '../../src/cli/output.js';
import type { ControlDatabase } from '../../src/control/control-database.js';
import { copyJournalToDatabase } from '../../src/control/event-sink.js';
import { FleetEventFeed, fleetTaskSource } from '../../src/control/fleet-events.js';
import { listFleetTasks } from '../../src/control/fleet-tasks.js';
import type { StampedEvent } from '../../src/core/events.js';
import { EventJournal } from '../../src/notes/event-journal.js';
import { Redaction } from '../../src/notes/redact.js';
import { ServeClient } from '../../src/serve/api-client.js';
import { createApi } from '../../src/serve/http-api.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { createDemoRepo } from '../support/demo-task.js';
import { migratedTestDatabase, type MigratedTestDatabase } from '../support/control-database.js';

let fleet: MigratedTestDatabase;
let admin: ControlDatabase;
let nodeA: ControlDatabase;
let nodeB: ControlDatabase;
const cleanups: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  fleet = await migratedTestDatabase();
  admin = fleet.admin;
  nodeA = await fleet.node();
  nodeB = await fleet.node();
}, 600_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fleet?.close();
});

const usage = { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0, costUsd: 0 };

it("a question waiting on node B shows in node A's list, the task's detail and `logs --server`; answered, it is gone", async () => {
  const taskId = 'FLEET-ASKS';
  await admin.pool.query(
    `INSERT INTO agent_runner.nodes (id, host, pid, capacity) VALUES ('node-b', 'b.example', 1, 1)`,
  );
  await admin.pool.query(
    `INSERT INTO agent_runner.tasks (id, repo_url, prd, state, node_id, lease_generation)
       VALUES ($1, 'https://git.example/r.git', '# P', 'RUNNING', 'node-b', 1)`,
    [taskId],
  );

  // Node B: the task asks (its journal, copied to the database under B's lease as it grows).
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'fleet-question-'));
  cleanups.push(() => rmSync(runDir, { recursive: true, force: true }));
  const journal = new EventJournal(runDir);
  const question = 'Should slugify keep digits?';
  const events: StampedEvent[] = [
    { type: 'transition', from: 'PLANNING', to: 'RUNNING', at: new Date().toISOString() },
    {
      type: 'decision',
      decision: { action: 'ask_human', reason: 'The PRD is silent on digits.', usedPatterns: [], question },
      usage,
      at: new Date().toISOString(),
    },
  ];
  for (const event of events) journal.append(event);
  let ended = false;
  const copy = copyJournalToDatabase(nodeB, taskId, journal.file, {
    ended: () => ended,
    signal: AbortSignal.timeout(60_000),
    redactJsonText: (text) => text,
    lease: { nodeId: 'node-b', generation: 1 },
  });
  cleanups.push(() => {
    ended = true;
    return copy;
  });

  // Node A: its own repository (which runs nothing), the fleet behind it, a real HTTP server.
  const { dir, remove } = createDemoRepo('');
  cleanups.push(remove);
  const redaction = new Redaction();
  const feed = new FleetEventFeed(nodeA);
  await feed.start();
  cleanups.push(() => feed.close());
  const token = 'fleet-question-token';
  const api = createApi(new TaskBoard(dir, createApp(process.env, {}, redaction), process.env), {
    token,
    redaction,
    fleetTasks: (query) => listFleetTasks(nodeA, query),
    fleetTask: fleetTaskSource(nodeA, feed),
  });
  const server = serve({ fetch: api.fetch, port: 0, hostname: '127.0.0.1' });
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new ServeClient(url, token);

  const listed = async () =>
    (
      await client.request<{ fleet: { taskId: string; question: string | null }[] }>('GET', '/api/tasks')
    ).fleet.find((task) => task.taskId === taskId);
  const deadline = Date.now() + 10_000;
  while ((await listed())?.question !== question && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  expect(await listed()).toMatchObject({ taskId, question });
  expect(await client.request('GET', `/api/tasks/${taskId}`)).toMatchObject({
    taskId,
    state: 'RUNNING',
    fleet: true,
    question,
    node: { id: 'node-b' },
  });
  const logs = async () => {
    const out: string[] = [];
    await logsCommand(
      taskId,
      { server: url },
      {
        output: safeOutput({ out: (t) => out.push(t), err: () => undefined, isTTY: false }, redaction),
        redaction,
        env: { ...process.env, [SERVER_TOKEN_VARIABLE]: token },
        cwd: os.tmpdir(),
        setExitCode: () => undefined,
      },
    );
    return out.join('\n');
  };
  const waiting = await logs();
  expect(waiting).toContain(`asks: ${question}`);
  expect(waiting).toContain(`waiting for an answer: ${question} (\`agent-runner answer ${taskId} "..."\`)`);

  // Answered on B (its journal says so): the question is gone everywhere.
  journal.append({ type: 'human', question, answer: 'Yes.', at: new Date().toISOString() });
  const gone = Date.now() + 10_000;
  while ((await listed())?.question !== null && Date.now() < gone)
    await new Promise((resolve) => setTimeout(resolve, 50));
  expect(await listed()).toMatchObject({ taskId, question: null });
  expect(await client.request('GET', `/api/tasks/${taskId}`)).toMatchObject({ question: null });
  const answered = await logs();
  expect(answered).toContain(`question: ${question} → Yes.`);
  expect(answered).not.toContain('waiting for an answer');
}, 60_000);
