/**
 * A pure node of the fleet (a server outside any git repository) over its API, as `serve --control` wires its
 * board: every request that needs a local repository is 400 `repository_invalid` with the way out (the README's
 * answer), a resume included whatever the task (before: 404, the board's list being empty); a server in a
 * repository still answers 404 for a task it does not have.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it, onTestFinished } from 'vitest';
import { createApp } from '../../src/app.js';
import { Redaction } from '../../src/notes/redact.js';
import { createApi } from '../../src/serve/http-api.js';
import { PureNodeBoard } from '../../src/serve/pure-node-board.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { createDemoRepo } from '../support/demo-task.js';

const token = 'pure-node-token';

function api(board: TaskBoard, redaction: Redaction) {
  const app = createApi(board, { token, redaction });
  return async (method: string, route: string, body?: unknown) => {
    const response = await app.request(route, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return {
      status: response.status,
      body: (await response.json()) as { error?: { code: string; message: string } },
    };
  };
}

it('a pure node answers a resume 400 repository_invalid, saying how tasks resume on a fleet; it writes nothing', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ar-pure-node-api-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const redaction = new Redaction();
  const request = api(new PureNodeBoard(dir, createApp(process.env, {}, redaction), process.env), redaction);

  for (const taskId of ['FLEET-1', 'NO-SUCH-TASK']) {
    const resumed = await request('POST', `/api/tasks/${taskId}/resume`, {});
    expect(resumed.status).toBe(400);
    expect(resumed.body.error?.code).toBe('repository_invalid');
    expect(resumed.body.error?.message).toMatch(
      /This node has no repository .*A fleet task is resumed by the fleet/,
    );
  }
  const started = await request('POST', '/api/tasks', { prd: '# A task' });
  expect(started).toMatchObject({ status: 400, body: { error: { code: 'repository_invalid' } } });
  expect(started.body.error?.message).toMatch(/Give `repo`/);
  expect(readdirSync(dir)).toEqual([]);
  // The OpenAPI document says the same.
  const document = (await (
    await createApi(new TaskBoard(dir, createApp(process.env, {}, redaction), process.env), {
      token,
      redaction,
    }).request('/api/openapi.json', { headers: { authorization: `Bearer ${token}` } })
  ).json()) as {
    paths: Record<string, { post?: { responses: Record<string, { description: string }> } }>;
  };
  expect(document.paths['/api/tasks/{id}/resume']?.post?.responses['400']?.description).toContain(
    '`repository_invalid` on a pure node',
  );
});

it('a server in a repository answers 404 for a resume of a task it does not have', async () => {
  const { dir, remove } = createDemoRepo('');
  onTestFinished(remove);
  const redaction = new Redaction();
  const request = api(new TaskBoard(dir, createApp(process.env, {}, redaction), process.env), redaction);
  const resumed = await request('POST', '/api/tasks/NO-SUCH-TASK/resume', {});
  expect(resumed).toEqual({
    status: 404,
    body: { error: { code: 'not_found', message: 'No task NO-SUCH-TASK in this repository.' } },
  });
});
