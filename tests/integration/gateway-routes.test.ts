/**
 * The gateway's HTTP routes on this machine, without Docker: the worker route on the unix socket (token
 * check, key swap, streaming, usage) and the Meta-agent route on loopback with the project's own
 * OpenAiChatModel (the real openai SDK), recorded and replayed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ModelBehaviorError } from '../../src/errors.js';
import type { Cassette } from '../../src/gateway/cassette.js';
import { ModelGateway, type ModelGatewayOptions } from '../../src/gateway/model-gateway.js';
import { OpenAiChatModel } from '../../src/meta/openai-chat-model.js';
import { startScriptedChatServer } from '../support/scripted-chat-server.js';

const WORKER_KEY = 'sk-worker-real-key-abcdefghijklmnop';
const META_KEY = 'sk-meta-real-key-abcdefghijklmnopq';

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'gw-routes-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startGateway(options: ModelGatewayOptions): Promise<ModelGateway> {
  const gateway = await ModelGateway.start(options);
  onTestFinished(() => gateway.close());
  return gateway;
}

/** An upstream that streams three SSE events with a pause before the last, recording what it was sent. */
async function startPausingUpstream(pauseMs: number) {
  const seen: { url: string; authorization: string | undefined; body: string }[] = [];
  let lastWriteAt = 0;
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      seen.push({ url: request.url ?? '', authorization: request.headers.authorization, body });
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: {"type":"response.created","response":{"id":"r1"}}\n\n');
      setTimeout(() => {
        lastWriteAt = performance.now();
        response.end(
          'data: {"type":"response.completed","response":{"id":"r1","usage":{"input_tokens":7,' +
            '"input_tokens_details":{"cached_tokens":3},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2}}}}\n\n',
        );
      }, pauseMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    seen,
    lastWriteAt: () => lastWriteAt,
  };
}

/** POSTs to the gateway's socket the way the relay would pass codex's request on. */
function postToSocket(
  socketPath: string,
  urlPath: string,
  token: string,
  onChunk: (chunk: string, at: number) => void,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        socketPath,
        path: urlPath,
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
      (response) => {
        response.on('data', (chunk: Buffer) => onChunk(chunk.toString(), performance.now()));
        response.on('end', () => resolve(response));
      },
    );
    request.on('error', reject);
    request.end('{"input":[]}');
  });
}

describe('worker route', () => {
  it('checks the token, sends the real key, streams each event as it comes, and counts usage', async () => {
    const upstream = await startPausingUpstream(400);
    const gateway = await startGateway({ worker: { baseUrl: upstream.baseUrl, apiKey: WORKER_KEY } });

    const refused = await postToSocket(gateway.socketPath, '/v1/responses', 'not-the-token', () => undefined);
    expect(refused.statusCode).toBe(401);
    expect(upstream.seen).toEqual([]);

    const chunks: { text: string; at: number }[] = [];
    const response = await postToSocket(
      gateway.socketPath,
      '/v1/responses',
      gateway.workerToken,
      (text, at) => chunks.push({ text, at }),
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream');
    expect(upstream.seen).toEqual([
      { url: '/v1/responses', authorization: `Bearer ${WORKER_KEY}`, body: '{"input":[]}' },
    ]);
    // The first event arrived before the upstream even wrote the last one: nothing is buffered.
    expect(chunks[0]?.text).toContain('response.created');
    expect(chunks[0]?.at ?? Infinity).toBeLessThan(upstream.lastWriteAt());
    expect(chunks.map((chunk) => chunk.text).join('')).toContain('"output_tokens":5');
    expect(gateway.takeWorkerUsage()).toEqual({
      inputTokens: 7,
      cachedInputTokens: 3,
      outputTokens: 5,
      reasoningTokens: 2,
    });
  });

  it('answers 502 naming the upstream when it is unreachable, and logs without the key', async () => {
    const logs: string[] = [];
    const gateway = await startGateway({
      worker: { baseUrl: `http://127.0.0.1:9/v1?key=${WORKER_KEY}`, apiKey: WORKER_KEY },
      onLog: (line) => logs.push(line),
    });
    let body = '';
    const response = await postToSocket(gateway.socketPath, '/v1/responses', gateway.workerToken, (text) => {
      body += text;
    });
    expect(response.statusCode).toBe(502);
    expect(body).toContain('upstream http://127.0.0.1:9 unreachable');
    expect(logs.join('\n')).toContain('unreachable');
    expect(logs.join('\n')).not.toContain(WORKER_KEY);
  });
});

describe('meta route', () => {
  it('forwards the SDK with the real key, records, and replays with no upstream; a changed request diverges', async () => {
    const chat = await startScriptedChatServer([{ reply: `type: plan_task\nsecret ${META_KEY}` }]);
    onTestFinished(() => chat.close());
    const cassetteFile = path.join(tempDir(), 'meta.cassette.json');
    const recording = await startGateway({
      worker: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: WORKER_KEY },
      meta: { baseUrl: chat.url, apiKey: META_KEY },
      mode: { kind: 'record', file: cassetteFile },
    });
    const model = (gateway: ModelGateway) =>
      new OpenAiChatModel({
        baseUrl: gateway.metaBaseUrl,
        apiKey: gateway.metaToken,
        model: 'meta-test-model',
        timeoutMs: 10_000,
        maxRetries: 0,
      });
    const messages = [
      { role: 'system' as const, content: 'You plan.' },
      { role: 'user' as const, content: 'Plan the task.' },
    ];
    const live = await model(recording).complete(messages);
    expect(live.text).toBe(`type: plan_task\nsecret ${META_KEY}`);
    expect(chat.requests[0]?.headers.authorization).toBe(`Bearer ${META_KEY}`);
    await recording.close();

    const text = readFileSync(cassetteFile, 'utf8');
    expect(text).not.toContain(META_KEY);
    expect(text).not.toContain(recording.metaToken);
    const cassette = JSON.parse(text) as Cassette;
    expect(cassette.exchanges.map((exchange) => [exchange.kind, exchange.path])).toEqual([
      ['meta', '/chat/completions'],
    ]);

    await chat.close();
    const replaying = await startGateway({
      worker: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: undefined },
      meta: { baseUrl: chat.url, apiKey: undefined },
      mode: { kind: 'replay', file: cassetteFile },
    });
    const replayed = await model(replaying).complete(messages);
    expect(replayed.text).toBe('type: plan_task\nsecret [REDACTED]');
    expect(replaying.replayRemaining()).toEqual({ worker: 0, meta: 0 });

    const diverging = await startGateway({
      worker: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: undefined },
      meta: { baseUrl: chat.url, apiKey: undefined },
      mode: { kind: 'replay', file: cassetteFile },
    });
    const changed = model(diverging).complete([
      messages[0]!,
      { role: 'user', content: 'Plan another task.' },
    ]);
    await expect(changed).rejects.toBeInstanceOf(ModelBehaviorError);
    await expect(changed).rejects.toThrow(/diverged at meta call #1 \(POST \/chat\/completions\)/);
    const divergence = diverging.takeDivergence();
    expect(divergence?.message).toContain('firstUser: recorded "Plan the task.", now "Plan another task."');
  });

  it('refuses a caller without the meta token', async () => {
    const gateway = await startGateway({
      worker: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: WORKER_KEY },
      meta: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: META_KEY },
    });
    const response = await fetch(`${gateway.metaBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer guess' },
      body: '{}',
    });
    expect(response.status).toBe(401);
  });
});
