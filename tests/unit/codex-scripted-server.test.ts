import { afterEach, describe, expect, it } from 'vitest';
import {
  ScriptedResponsesServer,
  assistantMessage,
  commandCall,
} from '../support/scripted-responses-server.js';

let server: ScriptedResponsesServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const post = (url: string, body: unknown) =>
  fetch(`${url}/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer test-token' },
    body: JSON.stringify(body),
  });

describe('ScriptedResponsesServer (the fake codex talks to)', () => {
  it('replays its script as data-only SSE and records the requests', async () => {
    server = await new ScriptedResponsesServer([
      { kind: 'output', items: [commandCall('echo hi', 'call_1')] },
      {
        kind: 'output',
        items: [assistantMessage('Done', 'msg_2')],
        usage: { inputTokens: 200, outputTokens: 20 },
      },
    ]).start();
    const url = server.baseUrl('127.0.0.1');

    const first = await post(url, { input: [{ role: 'user', content: 'go' }] });
    expect(first.headers.get('content-type')).toBe('text/event-stream');
    const events = (await first.text())
      .split('\n\n')
      .filter((chunk) => chunk !== '')
      .map((chunk) => {
        expect(chunk.startsWith('data: ')).toBe(true);
        return JSON.parse(chunk.slice('data: '.length)) as { type: string; item?: Record<string, unknown> };
      });
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[1]?.item).toEqual({
      type: 'function_call',
      call_id: 'call_1',
      name: 'exec_command',
      arguments: '{"cmd":"echo hi"}',
    });

    const second = await (await post(url, { input: ['history'] })).text();
    expect(second).toContain('"usage":{"input_tokens":200');
    server.assertComplete();

    // Past the script: a 500 that names the cause.
    const third = await post(url, {});
    expect(third.status).toBe(500);
    expect(await third.text()).toContain('script exhausted');

    expect(server.responseRequests()).toHaveLength(3);
    expect(server.requests[1]?.body).toEqual({ input: ['history'] });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer test-token');
  });

  it('answers HTTP errors and response.failed, and hangs until closed', async () => {
    server = await new ScriptedResponsesServer([
      { kind: 'http_error', status: 500, message: 'model overloaded' },
      { kind: 'failed', code: 'server_error', message: 'it broke' },
      { kind: 'hang' },
    ]).start();
    const url = server.baseUrl('127.0.0.1');
    const error = await post(url, {});
    expect(error.status).toBe(500);
    expect(await error.text()).toContain('model overloaded');
    expect(await (await post(url, {})).text()).toContain('"type":"response.failed"');
    const hanging = post(url, {}).then(
      () => 'answered',
      () => 'closed',
    );
    const raced = await Promise.race([
      hanging,
      new Promise((resolve) => setTimeout(() => resolve('pending'), 300)),
    ]);
    expect(raced).toBe('pending');
    await server.close();
    server = undefined;
    expect(await hanging).toBe('closed');
  });

  it('says when scripted replies were never used', async () => {
    server = await new ScriptedResponsesServer([{ kind: 'hang' }]).start();
    expect(() => server?.assertComplete()).toThrow(/never requested/);
  });
});
