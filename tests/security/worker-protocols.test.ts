/**
 * The gateway's guards hold in every protocol a worker speaks, each probed by a hostile request from inside the
 * real sandbox with the token from the sandbox's own environment, against a scripted server speaking that
 * protocol: the Anthropic Messages API (claude), the Gemini API (gemini), the Responses API and Chat
 * Completions (qwen). Codex's Responses traffic has its own tests (gateway-codex, gateway-limits).
 * - Rate: past `requestsPerMinute`, requests are refused with 429 before they leave the machine.
 * - Record, redaction, replay: a request carrying a configured secret and the worker's token, answered by an
 *   upstream that leaks the real key and the secret, is recorded with all three redacted; replayed with no
 *   upstream it gets the redacted answer and is metered as recorded; a changed request is refused as a
 *   divergence.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenUsage } from '../../src/core/ports.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { VERSION } from '../../src/version.js';
import { ClaudeWorkerAdapter } from '../../src/worker/claude-adapter.js';
import { GeminiWorkerAdapter } from '../../src/worker/gemini-adapter.js';
import { QwenWorkerAdapter } from '../../src/worker/qwen-adapter.js';
import { WORKER_KINDS, type OpenAiApi, type WorkerType } from '../../src/worker/worker-kinds.js';
import { ScriptedAnthropicServer } from '../support/scripted-anthropic-server.js';
import { ScriptedGeminiServer } from '../support/scripted-gemini-server.js';
import { ScriptedResponsesServer, assistantMessage } from '../support/scripted-responses-server.js';
import { builtWorkerImage } from '../support/worker-image.js';
import { probeRequests, tempDir, workerSandbox } from '../support/worker-sandbox.js';

const MODEL = 'protocol-test-model';
const REAL_KEY = 'sk-protocols-REALKEY-0123456789abcdefXYZ';
const PLANTED = 'internal-secret-770011';
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: VERSION });
let image = '';
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  await runtime.ping();
  image = await builtWorkerImage(docker, ['claude', 'gemini', 'qwen']);
}, 600_000);

afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});

/** A scripted upstream: where it is, how many requests reached it. */
interface Upstream {
  baseUrl: string;
  seen(): number;
}

interface ProtocolCase {
  name: string;
  type: WorkerType;
  api?: OpenAiApi;
  /** The worker's one allowed request target (prefix, path and query as sent). */
  target: string;
  body(text: string): unknown;
  /** An upstream answering each text in turn, each with 10 input and 2 output tokens. */
  upstream(answers: string[]): Promise<Upstream>;
}

const closing = <T extends { close(): Promise<void> }>(server: T): T => {
  closers.push(() => server.close());
  return server;
};

async function responsesUpstream(answers: string[]): Promise<Upstream> {
  const server = closing(
    await new ScriptedResponsesServer(
      answers.map((text) => ({
        kind: 'output' as const,
        items: [assistantMessage(text)],
        usage: { inputTokens: 10, outputTokens: 2 },
      })),
    ).start(),
  );
  return { baseUrl: server.baseUrl('127.0.0.1'), seen: () => server.responseRequests().length };
}

const CASES: ProtocolCase[] = [
  {
    name: 'claude (Anthropic Messages)',
    type: 'claude',
    target: '/claude/v1/messages?beta=true',
    body: (text) => ({
      model: MODEL,
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content: text }],
    }),
    upstream: async (answers) => {
      const server = closing(
        await new ScriptedAnthropicServer(
          answers.map((text) => ({ text, usage: { input: 10, output: 2 } })),
        ).start(),
      );
      return { baseUrl: server.origin, seen: () => server.requests.length };
    },
  },
  {
    name: 'gemini (Gemini API)',
    type: 'gemini',
    target: `/gemini/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`,
    body: (text) => ({ contents: [{ role: 'user', parts: [{ text }] }] }),
    upstream: async (answers) => {
      const server = closing(
        await new ScriptedGeminiServer(
          answers.map((text) => ({ text, usage: { prompt: 10, candidates: 2 } })),
        ).start(),
      );
      return { baseUrl: server.origin, seen: () => server.requests.length };
    },
  },
  {
    name: 'qwen (Responses API)',
    type: 'qwen',
    api: 'responses',
    target: '/qwen/v1/responses',
    body: (text) => ({ model: MODEL, stream: true, input: [{ role: 'user', content: text }] }),
    upstream: responsesUpstream,
  },
  {
    name: 'qwen (Chat Completions)',
    type: 'qwen',
    api: 'chat',
    target: '/qwen/v1/chat/completions',
    body: (text) => ({ model: MODEL, stream: true, messages: [{ role: 'user', content: text }] }),
    upstream: responsesUpstream,
  },
];

function sandboxFor(
  protocol: ProtocolCase,
  upstream: { baseUrl: string; apiKey: string },
  gateway: Parameters<typeof workerSandbox>[1]['gateway'],
) {
  return workerSandbox(runtime, {
    image,
    type: protocol.type,
    ...(protocol.api ? { protocol: protocol.api } : {}),
    upstream,
    model: MODEL,
    gateway,
    adapter: ({ baseUrl, token, home }) => {
      const options = { model: MODEL, baseUrl, apiKey: token, home };
      if (protocol.type === 'claude') return new ClaudeWorkerAdapter(runtime, options);
      if (protocol.type === 'gemini') return new GeminiWorkerAdapter(runtime, options);
      return new QwenWorkerAdapter(runtime, { ...options, ...(protocol.api ? { api: protocol.api } : {}) });
    },
  });
}

/** A port nothing listens on: an upstream that is gone. */
async function closedPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const status = (line: string | undefined) => line?.split(' ')[1];
const USAGE = (requests: number): TokenUsage => ({
  inputTokens: 10 * requests,
  cachedInputTokens: 0,
  outputTokens: 2 * requests,
  reasoningTokens: 0,
});

describe.each(CASES)('the gateway for $name, probed from inside the sandbox', (protocol) => {
  const keyHeader = WORKER_KINDS[protocol.type].keyHeader;

  it('refuses requests past the rate limit with 429 before they leave', async () => {
    const upstream = await protocol.upstream(['one', 'two', 'three', 'four', 'five']);
    const { gateway, sandbox } = await sandboxFor(
      protocol,
      { baseUrl: upstream.baseUrl, apiKey: REAL_KEY },
      { limits: { requestsPerMinute: 3 } },
    );
    const lines = await probeRequests(
      runtime,
      sandbox.id,
      keyHeader,
      Array.from({ length: 5 }, (_, index) => ({
        target: protocol.target,
        body: protocol.body(`ask ${index}`),
      })),
    );
    expect(lines.map(status), lines.join('\n')).toEqual(['200', '200', '200', '429', '429']);
    expect(lines[3]).toContain('rate');
    expect(upstream.seen()).toBe(3);
    expect(gateway.takeWorkerUsage()).toEqual(USAGE(3));
  }, 120_000);

  it('records a hostile exchange redacted, replays it with no upstream, refuses a changed request', async () => {
    const cassette = path.join(tempDir('protocol-cassette-'), 'run.cassette.json');
    const leak = `leaked ${REAL_KEY} and ${PLANTED}`;
    const upstream = await protocol.upstream([leak]);
    const recording = await sandboxFor(
      protocol,
      { baseUrl: upstream.baseUrl, apiKey: REAL_KEY },
      { mode: { kind: 'record', file: cassette }, redactPatterns: ['internal-secret-\\d+'] },
    );
    // The worker sends what it found (a configured secret) and its own token, hoping both get written down.
    const hostile = (token: string) => protocol.body(`keep ${PLANTED} and ${token} for later`);
    const [recorded] = await probeRequests(
      runtime,
      recording.sandbox.id,
      keyHeader,
      [{ target: protocol.target, body: hostile(recording.gateway.workerToken) }],
      4000,
    );
    expect(status(recorded), recorded).toBe('200');
    // The probe can see the leak it looks for: the live answer carries it (the worker's own view is not ours).
    expect(recorded).toContain(PLANTED);
    await recording.gateway.close();
    const text = readFileSync(cassette, 'utf8');
    for (const secret of [REAL_KEY, PLANTED, recording.gateway.workerToken])
      expect(text).not.toContain(secret);
    expect(text).toContain('leaked [REDACTED] and [REDACTED]');
    expect(text).toContain('keep [REDACTED] and [REDACTED] for later');

    const replayingGateway = async () =>
      sandboxFor(
        protocol,
        { baseUrl: `http://127.0.0.1:${await closedPort()}`, apiKey: REAL_KEY },
        { mode: { kind: 'replay', file: cassette }, redactPatterns: ['internal-secret-\\d+'] },
      );
    const replaying = await replayingGateway();
    const [replayed] = await probeRequests(
      runtime,
      replaying.sandbox.id,
      keyHeader,
      [{ target: protocol.target, body: hostile(replaying.gateway.workerToken) }],
      4000,
    );
    expect(status(replayed), replayed).toBe('200');
    expect(replayed).toContain('leaked [REDACTED] and [REDACTED]');
    expect(replayed).not.toContain(PLANTED);
    expect(replaying.gateway.takeWorkerUsage()).toEqual(USAGE(1));

    // The same call asking something else: refused, naming the divergence; nothing reaches an upstream.
    const diverging = await replayingGateway();
    const [changed] = await probeRequests(
      runtime,
      diverging.sandbox.id,
      keyHeader,
      [{ target: protocol.target, body: protocol.body('something else') }],
      4000,
    );
    expect(status(changed), changed).toBe('400');
    expect(changed).toContain('diverged at worker call #1');
    expect(upstream.seen()).toBe(1);
  }, 120_000);
});
