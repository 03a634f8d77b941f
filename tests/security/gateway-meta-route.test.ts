/**
 * The Meta-agent's loopback route, from the host (the sandbox has no route to it at all: under gateway-only
 * it has no network, and on the socket `/meta/v1/*` is refused, see gateway-misuse.test.ts). The worker's
 * token is worth nothing there, and only Chat Completions is forwarded; the Meta-agent's own call with its
 * token goes through (the canary). Also: a declared Content-Length over the cap is refused before any of the
 * body is read.
 */
import http from 'node:http';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { GatewayRefusal } from '../../src/core/events.js';
import { ModelGateway } from '../../src/gateway/model-gateway.js';
import { startScriptedChatServer } from '../support/scripted-chat-server.js';

const META_KEY = 'sk-sec-meta-real-key-abcdefghijkl';

function send(
  target: { port?: number; socketPath?: string },
  method: string,
  urlPath: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', ...target, method, path: urlPath, headers },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function setup() {
  const chat = await startScriptedChatServer([{ reply: 'type: x' }]);
  onTestFinished(() => chat.close());
  const refusals: GatewayRefusal[] = [];
  const gateway = await ModelGateway.start({
    worker: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-sec-worker-real-key-abcdefghij' },
    meta: { baseUrl: chat.url, apiKey: META_KEY },
    allowedModels: ['worker-model'],
    limits: { maxRequestBytes: 1024 },
    onRefusal: (refusal) => refusals.push(refusal),
  });
  onTestFinished(() => gateway.close());
  const port = Number(new URL(gateway.metaBaseUrl).port);
  return { chat, gateway, refusals, port };
}

const chatBody = JSON.stringify({ model: 'gpt-5.5', messages: [{ role: 'user', content: 'hi' }] });

describe("the Meta-agent's route", () => {
  it("forwards the Meta-agent's own Chat Completions call and nothing the worker's token asks", async () => {
    const { chat, gateway, refusals, port } = await setup();
    // The canary: the Meta-agent's call reaches the upstream with the real key.
    const own = await send(
      { port },
      'POST',
      '/meta/v1/chat/completions',
      { authorization: `Bearer ${gateway.metaToken}`, 'content-type': 'application/json' },
      chatBody,
    );
    expect(own.status).toBe(200);
    expect(chat.requests).toHaveLength(1);
    expect(chat.requests[0]?.headers.authorization).toBe(`Bearer ${META_KEY}`);

    const worker = { authorization: `Bearer ${gateway.workerToken}`, 'content-type': 'application/json' };
    const meta = { authorization: `Bearer ${gateway.metaToken}`, 'content-type': 'application/json' };
    const attempts: [string, Record<string, string>, string, number, string][] = [
      ['POST', worker, '/meta/v1/chat/completions', 403, 'token'],
      ['POST', worker, '/meta/v1/responses', 403, 'token'],
      ['POST', meta, '/meta/v1/responses', 403, 'route'],
      ['POST', meta, '/meta/v1/files', 403, 'route'],
      ['GET', meta, '/meta/v1/models', 403, 'route'],
      ['POST', meta, '/meta/v1/../v1/chat/completions', 403, 'path'],
      ['POST', meta, '/meta/v1/%2e%2e/chat/completions', 403, 'path'],
    ];
    for (const [method, headers, urlPath, status, reason] of attempts) {
      const answer = await send({ port }, method, urlPath, headers, method === 'GET' ? '' : chatBody);
      expect(answer.status, `${method} ${urlPath}`).toBe(status);
      expect(refusals.at(-1), `${method} ${urlPath}`).toMatchObject({ route: 'meta', reason, status });
    }
    expect(chat.requests).toHaveLength(1);
  });

  it('refuses a declared Content-Length over the cap without waiting for the body', async () => {
    const { gateway, refusals } = await setup();
    const answer = await new Promise<number>((resolve, reject) => {
      const request = http.request(
        {
          socketPath: gateway.socketPath,
          method: 'POST',
          path: '/v1/responses',
          headers: {
            authorization: `Bearer ${gateway.workerToken}`,
            'content-length': String(64 * 1024 ** 2),
          },
        },
        (response) => resolve(response.statusCode ?? 0),
      );
      request.on('error', reject);
      // A few bytes of the 64 MiB announced, and then nothing: a gateway that waited for them would hang.
      request.write('{"model":');
    });
    expect(answer).toBe(413);
    expect(refusals.at(-1)).toMatchObject({ reason: 'body_too_large', status: 413 });
  });
});
