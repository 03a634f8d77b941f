import { createServer } from 'node:net';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { ModelBehaviorError, UserError } from '../../src/errors.js';
import { createOpenAiChatModel, OpenAiChatModel, retryAfterMs } from '../../src/meta/openai-chat-model.js';
import {
  startScriptedChatServer,
  type ChatStep,
  type ScriptedChatServer,
} from '../support/scripted-chat-server.js';

const servers: ScriptedChatServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(script: ChatStep[]): Promise<ScriptedChatServer> {
  const server = await startScriptedChatServer(script);
  servers.push(server);
  return server;
}

function modelFor(
  server: { url: string },
  options: Partial<ConstructorParameters<typeof OpenAiChatModel>[0]> = {},
) {
  return new OpenAiChatModel({
    baseUrl: server.url,
    apiKey: 'test-key',
    model: 'gpt-test',
    timeoutMs: 5_000,
    maxRetries: 2,
    ...options,
  });
}

const messages = [
  { role: 'system' as const, content: 'You are a test.' },
  { role: 'user' as const, content: 'Say hi.' },
];

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

describe('OpenAiChatModel against a scripted Chat Completions server', () => {
  it('sends the messages and returns text, usage and cost', async () => {
    const server = await serve([
      {
        reply: 'hi',
        usage: { prompt_tokens: 2_000_000, completion_tokens: 1_000_000, cached_tokens: 1_000_000 },
      },
    ]);
    const model = modelFor(server, { price: { input: 2, cachedInput: 0.5, output: 8 } });
    const completion = await model.complete(messages);
    expect(completion.text).toBe('hi');
    expect(completion.usage).toEqual({
      inputTokens: 2_000_000,
      outputTokens: 1_000_000,
      cachedInputTokens: 1_000_000,
      reasoningTokens: 0,
      costUsd: 2 + 0.5 + 8,
    });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body.messages).toEqual(messages);
    expect(server.requests[0]?.body.model).toBe('gpt-test');
    expect(server.requests[0]?.headers.authorization).toBe('Bearer test-key');
  });

  it('the scripted server also streams (SSE) for clients that ask', async () => {
    const server = await serve([
      { reply: 'a streamed reply that spans several chunks', usage: { prompt_tokens: 5 } },
    ]);
    const client = new OpenAI({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'm',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let promptTokens = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      promptTokens = chunk.usage?.prompt_tokens ?? promptTokens;
    }
    expect(text).toBe('a streamed reply that spans several chunks');
    expect(promptTokens).toBe(5);
    expect(server.requests[0]?.body.stream).toBe(true);
  });

  it('429 with Retry-After, then success: waits what the server asked', async () => {
    const server = await serve([
      { status: 429, headers: { 'retry-after': '1' } },
      { reply: 'after the wait' },
    ]);
    const waits: number[] = [];
    const model = modelFor(server, {
      sleep: async (ms) => {
        waits.push(ms);
        await new Promise((resolve) => setTimeout(resolve, ms));
      },
    });
    const started = Date.now();
    const completion = await model.complete(messages);
    expect(completion.text).toBe('after the wait');
    expect(waits).toEqual([1000]);
    expect(server.requests).toHaveLength(2);
    expect((server.requests[1]?.at ?? 0) - (server.requests[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('500 until the retries run out: model_http_error after maxRetries + 1 attempts', async () => {
    const server = await serve([
      { status: 500 },
      { status: 502 },
      { status: 503, body: { error: { message: 'overloaded' } } },
      { reply: 'never sent' },
    ]);
    const waits: number[] = [];
    const model = modelFor(server, { maxRetries: 2, sleep: async (ms) => void waits.push(ms) });
    const error = await model.complete(messages).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelBehaviorError);
    expect(error).toMatchObject({
      code: 'model_http_error',
      retryable: true,
      details: { status: 503, attempts: 3 },
    });
    expect((error as Error).message).toContain('answered HTTP 503: overloaded');
    expect((error as Error).message).toContain('Gave up after 3 attempt(s)');
    expect(server.requests).toHaveLength(3);
    expect(server.remaining()).toBe(1);
    // Exponential backoff with jitter: ~500 ms then ~1000 ms.
    expect(waits).toHaveLength(2);
    expect(waits[0]).toBeGreaterThan(370);
    expect(waits[0]).toBeLessThanOrEqual(500);
    expect(waits[1]).toBeGreaterThan(740);
    expect(waits[1]).toBeLessThanOrEqual(1000);
  });

  it('a Retry-After longer than the limit fails at once instead of waiting an hour', async () => {
    const server = await serve([{ status: 429, headers: { 'retry-after': '3600' } }, { reply: 'never' }]);
    const model = modelFor(server, { sleep: async () => expect.fail('must not wait') });
    const error = await model.complete(messages).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'model_http_error' });
    expect((error as Error).message).toContain('asked to wait 3600s, more than the 60s agent-runner waits');
    expect(server.requests).toHaveLength(1);
  });

  it('401 is not retried and names the key variable', async () => {
    const server = await serve([{ status: 401, body: { error: { message: 'bad key' } } }]);
    const error = await modelFor(server, { apiKeyEnv: 'MY_KEY' })
      .complete(messages)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'model_http_error', retryable: false });
    expect((error as Error).message).toContain('Check the API key in the environment variable MY_KEY');
    expect(server.requests).toHaveLength(1);
  });

  it('connection refused: model_unreachable naming the URL and the fix', async () => {
    const url = `http://127.0.0.1:${await closedPort()}/v1`;
    const error = await modelFor({ url })
      .complete(messages)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelBehaviorError);
    expect(error).toMatchObject({ code: 'model_unreachable', details: { code: 'ECONNREFUSED' } });
    expect((error as Error).message).toContain(
      `Cannot reach the Meta-agent model at ${url} (connection refused)`,
    );
    expect((error as Error).message).toContain('meta.baseUrl');
  });

  it('DNS failure: model_unreachable', async () => {
    // A real lookup would send a query to the machine's resolver; the failure undici reports is simulated
    // at the SDK's fetch option instead, so the SDK's own error handling still runs.
    const fetchFailingDns: typeof fetch = async () => {
      const lookup = Object.assign(new Error('getaddrinfo ENOTFOUND model.example'), { code: 'ENOTFOUND' });
      throw new TypeError('fetch failed', { cause: lookup });
    };
    const url = 'http://model.example/v1';
    const error = await modelFor({ url }, { fetch: fetchFailingDns })
      .complete(messages)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'model_unreachable', details: { code: 'ENOTFOUND' } });
    expect((error as Error).message).toContain(
      `Cannot reach the Meta-agent model at ${url} (host not found (DNS))`,
    );
  });

  it('a hanging server: model_timeout after the request timeout, not retried', async () => {
    const server = await serve([{ hang: true }, { reply: 'too late' }]);
    const started = Date.now();
    const error = await modelFor(server, { timeoutMs: 300, maxRetries: 2 })
      .complete(messages)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'model_timeout', retryable: true });
    expect((error as Error).message).toContain('meta.requestTimeout');
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(server.requests).toHaveLength(1);
  });

  it('a server that sends headers and then stalls: model_timeout too', async () => {
    const server = await serve([{ stall: true }]);
    const started = Date.now();
    const error = await modelFor(server, { timeoutMs: 300, maxRetries: 0 })
      .complete(messages)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'model_timeout' });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('an abort signal interrupts a wait between retries', async () => {
    const server = await serve([{ status: 429, headers: { 'retry-after': '30' } }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = Date.now();
    const error = await modelFor(server)
      .complete(messages, { signal: controller.signal })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'interrupted' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('createOpenAiChatModel', () => {
  it('takes URL, model, timeout, retries and price from the config and the key from meta.apiKeyEnv', async () => {
    const server = await serve([{ reply: 'ok', usage: { prompt_tokens: 1_000_000, completion_tokens: 0 } }]);
    const config = validateConfig([
      {
        source: 'test',
        values: {
          meta: { baseUrl: server.url, model: 'm1', apiKeyEnv: 'TEST_META_KEY' },
          prices: { m1: { input: 3, output: 10 } },
        },
      },
    ]);
    const model = createOpenAiChatModel(config, { TEST_META_KEY: 'secret' });
    const completion = await model.complete(messages);
    expect(completion.usage.costUsd).toBe(3);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer secret');
    expect(server.requests[0]?.body.model).toBe('m1');
  });

  it('a missing key is a UserError naming the variable', () => {
    const config = validateConfig([{ source: 'test', values: { meta: { apiKeyEnv: 'NOPE_KEY' } } }]);
    expect(() => createOpenAiChatModel(config, {})).toThrow(UserError);
    expect(() => createOpenAiChatModel(config, {})).toThrow(/set the environment variable NOPE_KEY/);
  });
});

describe('retryAfterMs', () => {
  it('reads retry-after-ms, seconds and HTTP dates', () => {
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250' }))).toBe(250);
    expect(retryAfterMs(new Headers({ 'retry-after': '2' }))).toBe(2000);
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(retryAfterMs(new Headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:05 GMT' }), now)).toBe(5000);
    expect(retryAfterMs(new Headers())).toBeUndefined();
  });
});
