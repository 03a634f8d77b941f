/**
 * A follow-up queued on the fleet, on the real PostgreSQL: node A's API (createApi with the fleet's queue, as
 * `serve --control` wires it; its repository has no such task) queues `POST /api/tasks/{id}/followup` of a task
 * the fleet ran to its end (202, queued), and node B, which took the task the first time, takes the follow-up with
 * its instruction (the runner implements the node's port; the sandbox and the model are the e2e's). A task the
 * fleet does not have, or one that has not ended, is refused (400) and nothing is queued.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import type { ControlDatabase } from '../../src/control/control-database.js';
import { FleetNode } from '../../src/control/fleet-node.js';
import { enqueueFollowup, enqueueTask, startQueueClient } from '../../src/control/task-queue.js';
import { Redaction } from '../../src/notes/redact.js';
import { createApi } from '../../src/serve/http-api.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import {
  migratedTestDatabase,
  RecordingRunner,
  type MigratedTestDatabase,
} from '../support/control-database.js';
import { createDemoRepo } from '../support/demo-task.js';

let fleet: MigratedTestDatabase;
const cleanups: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  fleet = await migratedTestDatabase();
}, 600_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fleet?.close();
});

function nodeDatabase(): Promise<ControlDatabase> {
  return fleet.node();
}

async function until(check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
}

it('a follow-up posted on node A is queued on the fleet and taken by node B with its instruction', async () => {
  // Node B runs the task the first time, to its end.
  const databaseB = await nodeDatabase();
  const bossB = await startQueueClient(databaseB);
  const runner = new RecordingRunner();
  const nodeB = new FleetNode(databaseB, bossB, runner, { id: 'node-b', capacity: 1, pollMs: 200 });
  cleanups.push(async () => {
    await nodeB.stop();
    await bossB.stop({ graceful: false, wait: true });
  });
  await nodeB.start();
  const databaseA = await nodeDatabase();
  const bossA = await startQueueClient(databaseA);
  cleanups.push(() => bossA.stop({ graceful: false, wait: true }));
  await enqueueTask(databaseA, bossA, {
    taskId: 'FU-FLEET',
    repoUrl: 'https://git.example/app.git',
    prd: '# P\n',
  });
  const state = async () =>
    (
      await databaseA.pool.query<{ state: string }>(
        `SELECT state FROM agent_runner.tasks WHERE id = 'FU-FLEET'`,
      )
    ).rows[0]?.state;
  await until(async () => (await state()) === 'COMPLETE');
  expect(runner.ran.map((task) => [task.taskId, task.followup])).toEqual([['FU-FLEET', undefined]]);

  // Node A's API: its own repository has no such task, so the follow-up goes to the fleet's queue.
  const { dir, remove } = createDemoRepo('');
  cleanups.push(remove);
  const redaction = new Redaction();
  const token = randomBytes(12).toString('hex');
  const api = createApi(new TaskBoard(dir, createApp(process.env, {}, redaction), process.env), {
    token,
    redaction,
    enqueueFollowup: (taskId, followup) => enqueueFollowup(databaseA, bossA, taskId, followup),
  });
  const post = async (taskId: string, body: unknown) => {
    const response = await api.request(`/api/tasks/${taskId}/followup`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  const instruction = 'Also handle empty input.';
  expect(await post('FU-FLEET', { message: instruction, pr: true })).toEqual({
    status: 202,
    body: { taskId: 'FU-FLEET', followup: true, queued: true },
  });
  await until(() => runner.ran.length === 2);
  expect(runner.ran[1]).toMatchObject({
    taskId: 'FU-FLEET',
    repoUrl: 'https://git.example/app.git',
    followup: { message: instruction, pr: true },
  });
  await until(async () => (await state()) === 'COMPLETE');
  expect(await state()).toBe('COMPLETE');

  // Not a task of the fleet, and one that has not ended: refused, nothing queued.
  const unknown = await post('NO-SUCH', { message: 'x' });
  expect(unknown.status).toBe(400);
  expect((unknown.body.error as { message: string }).message).toContain(
    'is not a task of the fleet that has ended',
  );
  // Node B stopped first: the queued task stays queued.
  await nodeB.stop();
  await enqueueTask(databaseA, bossA, {
    taskId: 'FU-QUEUED',
    repoUrl: 'https://git.example/app.git',
    prd: '# Q\n',
  });
  const queued = await post('FU-QUEUED', { message: 'x' });
  expect(queued.status).toBe(400);
  expect(runner.ran.map((task) => task.taskId)).toEqual(['FU-FLEET', 'FU-FLEET']);
}, 120_000);
