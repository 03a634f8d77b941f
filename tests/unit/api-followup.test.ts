/**
 * `POST /api/tasks/{id}/followup` on a real server over a real repository (no Docker: every call here is refused
 * before a task would start): an unknown task is 404, a body without the instruction 400 naming the field, a task
 * that cannot be followed up 400 with the command's own message, a viewer 403; each call of an operator is in the
 * audit log as `task.followup` with its status. The route's start of a real follow-up is tested end to end.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCliCaptured } from '../support/cli.js';
import { call, startTokenServer } from '../support/token-server.js';
import { createFinishedTask } from '../support/finished-task.js';

describe('POST /api/tasks/{id}/followup', () => {
  it('refuses what cannot be followed up, each call audited; a viewer may not', async () => {
    const task = await createFinishedTask({ taskId: 'fu-api-1' });
    onTestFinished(() => rmSync(task.repo.root, { recursive: true, force: true }));
    const server = await startTokenServer(task.repo.root);
    onTestFinished(() => server.close());
    const operator = (await server.tokens.create('olga', 'operator')).token;
    const viewer = (await server.tokens.create('vic', 'viewer')).token;
    const followup = (id: string, body: unknown, token = operator) =>
      call(server.url, 'POST', `/api/tasks/${id}/followup`, token, body);

    const unknown = await followup('no-such-task', { message: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: 'not_found' } });
    const empty = await followup('fu-api-1', { pr: true });
    expect(empty.status).toBe(400);
    expect(empty.body).toMatchObject({ error: { code: 'invalid_body', field: 'message' } });
    const extra = await followup('fu-api-1', { message: 'x', maxIterations: 99 });
    expect(extra.status).toBe(400);
    // The fixture's task ended without acceptance criteria: the command's own refusal, with its fix.
    const refused = await followup('fu-api-1', { message: 'Also handle empty input.' });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { code: 'usage' } });
    expect((refused.body?.error as { message: string }).message).toContain(
      'before it had acceptance criteria, so there is nothing to continue',
    );
    const forbidden = await followup('fu-api-1', { message: 'x' }, viewer);
    expect(forbidden.status).toBe(403);
    expect((forbidden.body?.error as { message: string }).message).toContain('needs the operator role');
    expect(server.board.isServed('fu-api-1')).toBe(false);

    // The command as the server's client (`--server`, the token in AGENT_RUNNER_TOKEN): the server's refusal, exit 2.
    const client = await runCliCaptured(
      ['followup', 'agent-runner/fu-api-1', '--message', 'Also handle empty input.', '--server', server.url],
      { cwd: task.repo.root, env: { ...process.env, AGENT_RUNNER_TOKEN: operator } },
    );
    expect(client.exitCode).toBe(2);
    expect(client.stderr).toContain('before it had acceptance criteria, so there is nothing to continue');

    const audited = (await server.audit.list()).filter((entry) => entry.action === 'task.followup');
    expect(audited.map((entry) => [entry.actor.name, entry.status])).toEqual([
      ['olga', 404],
      ['olga', 400],
      ['olga', 400],
      ['olga', 400],
      ['vic', 403],
      ['olga', 400],
    ]);
  });
});
