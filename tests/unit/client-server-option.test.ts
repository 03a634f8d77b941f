/**
 * `--server URL` on the client verbs: the token comes from AGENT_RUNNER_TOKEN only (a missing one is exit 2
 * with the fix), it travels in the Authorization header to the named server (a scripted HTTP server here,
 * answering as a node does for another node's task), and the messages name the node that runs the task.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCliCaptured } from '../support/cli.js';

const TOKEN = 'token-for-the-server-option-test';
const seen: { method?: string; url?: string; authorization?: string; body: string }[] = [];
const server = createServer((request: IncomingMessage, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    seen.push({
      method: request.method,
      url: request.url,
      authorization: request.headers.authorization,
      body,
    });
    const stop = request.url?.endsWith('/stop');
    response.writeHead(202, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify(
        stop
          ? { taskId: 'T-1', stop: 'requested', node: 'node-b' }
          : { taskId: 'T-1', answered: true, node: 'node-b' },
      ),
    );
  });
});
let url = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it('refuses --server without AGENT_RUNNER_TOKEN, and a --server that is no URL (exit 2, the fix named)', async () => {
  const missing = await runCliCaptured(['stop', 'T-1', '--server', url], { env: {} });
  expect(missing.exitCode).toBe(2);
  expect(missing.stderr).toContain('set AGENT_RUNNER_TOKEN');
  const bad = await runCliCaptured(['answer', 'T-1', 'yes', '--server', 'node-a:7770'], {
    env: { AGENT_RUNNER_TOKEN: TOKEN },
  });
  expect(bad.exitCode).toBe(2);
  expect(bad.stderr).toContain("give the server's URL");
  expect(seen).toEqual([]);
});

it('stop and answer go to the named server with its token in the header, and say which node runs the task', async () => {
  const env = { AGENT_RUNNER_TOKEN: TOKEN };
  const stop = await runCliCaptured(['stop', 'T-1', '--server', `${url}/`], { env, cwd: '/' });
  expect(stop.exitCode).toBe(0);
  expect(stop.stderr).toContain('stop of T-1 sent to node node-b, which runs it');
  const answer = await runCliCaptured(['answer', 'T-1', 'keep digits', '--server', url], { env, cwd: '/' });
  expect(answer.exitCode).toBe(0);
  expect(answer.stderr).toContain('answered T-1 (sent to node node-b, which runs it)');
  expect(seen).toEqual([
    { method: 'POST', url: '/api/tasks/T-1/stop', authorization: `Bearer ${TOKEN}`, body: '' },
    {
      method: 'POST',
      url: '/api/tasks/T-1/answer',
      authorization: `Bearer ${TOKEN}`,
      body: JSON.stringify({ text: 'keep digits' }),
    },
  ]);
  expect(stop.stdout + stop.stderr + answer.stdout + answer.stderr).not.toContain(TOKEN);
});
