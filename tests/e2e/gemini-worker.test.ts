/**
 * The real Gemini CLI in the real worker image (on its own Node 22), on a real Docker engine, talking to its
 * model only through the gateway (gateway-only), which forwards to a scripted server speaking the Gemini API
 * on this machine's loopback. The model is in the path: the gateway's route for gemini is its model pin.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayBudget } from '../../src/gateway/gateway-budget.js';
import { GatewayMeteredWorker } from '../../src/gateway/gateway-guards.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { VERSION } from '../../src/version.js';
import { GeminiWorkerAdapter } from '../../src/worker/gemini-adapter.js';
import { commitProjectFileAndMemory, memoryAsTaskReads, occurrences } from '../support/memory-fixture.js';
import { ScriptedGeminiServer, type GeminiTurn } from '../support/scripted-gemini-server.js';
import { builtWorkerImage } from '../support/worker-image.js';
import {
  FIND_IN_FILES,
  FIND_IN_PROCESSES,
  probeRequests,
  searchSandbox,
  switchableBudget,
  workerSandbox,
} from '../support/worker-sandbox.js';

const REAL_KEY = 'AIza-gatewaytest-REALKEY-0123456789abcdefXYZ';
const MODEL = 'gemini-scripted-test';
const ROUTE = `/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`;
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: VERSION });
let image = '';
const servers: ScriptedGeminiServer[] = [];

beforeAll(async () => {
  await runtime.ping();
  image = await builtWorkerImage(docker, ['gemini']);
}, 600_000);

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

async function upstreamOf(turns: GeminiTurn[]): Promise<ScriptedGeminiServer> {
  const server = await new ScriptedGeminiServer(turns).start();
  servers.push(server);
  return server;
}

function geminiSandbox(upstream: ScriptedGeminiServer, budget?: GatewayBudget) {
  return workerSandbox(runtime, {
    ...(budget ? { budget } : {}),
    image,
    type: 'gemini',
    upstream: { baseUrl: upstream.origin, apiKey: REAL_KEY },
    model: MODEL,
    adapter: ({ baseUrl, token, home }) =>
      new GeminiWorkerAdapter(runtime, { model: MODEL, baseUrl, apiKey: token, home }),
  });
}

describe('Gemini CLI as a worker, through the gateway (gateway-only)', () => {
  it('writes a file, runs a failing and a passing command, commits; then resume continues the same session', async () => {
    const upstream = await upstreamOf([
      { shell: 'printf "hello\\n" > hello.txt', usage: { prompt: 120, candidates: 11 } },
      { shell: 'ls no-such-file', usage: { prompt: 130, candidates: 12, cached: 40 } },
      { shell: 'grep -q hello hello.txt', usage: { prompt: 140, candidates: 13, thoughts: 5 } },
      {
        shell: 'git add hello.txt && git -c user.name=w -c user.email=w@e commit -qm "add hello"',
        usage: { prompt: 150, candidates: 14 },
      },
      { text: 'Created hello.txt and committed it.', usage: { prompt: 160, candidates: 15 } },
      { shell: 'cat hello.txt', usage: { prompt: 200, candidates: 16 } },
      { text: 'hello.txt says hello.', usage: { prompt: 210, candidates: 17 } },
    ]);
    const { gateway, sandbox, workspace, worker, request, events } = await geminiSandbox(upstream);
    // The project's own GEMINI.md and the memory bank, committed: the run gets them as a task would.
    const memory = commitProjectFileAndMemory(workspace, 'GEMINI.md');
    const { workerInstructions } = await memoryAsTaskReads(workspace);
    const instructions = workerInstructions.gemini;

    const first = await worker.run(
      request('Create hello.txt containing hello and commit it.', { instructions }),
    );
    expect(first.errors).toEqual([]);
    expect(first.exitCode).toBe(0);
    expect(readFileSync(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
    expect(
      execFileSync('git', ['-c', 'safe.directory=*', 'log', '-1', '--format=%s'], {
        cwd: workspace,
        encoding: 'utf8',
      }).trim(),
    ).toBe('add hello');
    // Gemini CLI's stream gives no exit code: each command is recorded with an unknown one, never a made-up 0.
    expect(first.commands.map((command) => command.command)).toEqual([
      'printf "hello\\n" > hello.txt',
      'ls no-such-file',
      'grep -q hello hello.txt',
      'git add hello.txt && git -c user.name=w -c user.email=w@e commit -qm "add hello"',
    ]);
    expect(first.commands[1]).toMatchObject({ exitCode: null, status: 'unknown' });
    expect(first.commands[1]?.outputTail).toMatch(/no-such-file/);
    expect(first.finalMessage).toBe('Created hello.txt and committed it.');
    expect(first.threadId).toMatch(/^[0-9a-f-]{36}$/);
    expect(events).toContainEqual({ kind: 'thread_started', threadId: first.threadId });

    // Usage: the last usageMetadata of each response (thoughts count as output and as reasoning).
    expect(gateway.takeWorkerUsage()).toEqual({
      inputTokens: 120 + 130 + 140 + 150 + 160,
      cachedInputTokens: 40,
      outputTokens: 11 + 12 + 13 + 5 + 14 + 15,
      reasoningTokens: 5,
    });
    expect(upstream.requests).toHaveLength(5);
    for (const seen of upstream.requests) {
      expect(seen).toMatchObject({ method: 'POST', target: ROUTE });
      expect(seen.headers['x-goog-api-key']).toBe(REAL_KEY);
      expect(seen.headers.authorization).toBeUndefined();
      expect(JSON.stringify(seen.headers)).not.toContain(gateway.workerToken);
    }

    // The CLI's first request: the project's GEMINI.md once, in the first user message; the active entry in the
    // system instruction (which the model reads first: Gemini CLI allows no other order); no archived entry.
    const body = upstream.requests[0]?.body as { contents?: unknown[]; systemInstruction?: unknown };
    const sent = JSON.stringify(body);
    expect(occurrences(sent, memory.project)).toBe(1);
    expect(JSON.stringify(body.contents?.[0])).toContain(memory.project);
    expect(JSON.stringify(body.systemInstruction)).toContain(
      JSON.stringify(instructions.trim()).slice(1, -1),
    );
    expect(sent).not.toContain(memory.archived);

    const second = await worker.run(
      request('Now print hello.txt.', {
        mode: 'resume',
        threadId: first.threadId ?? undefined,
        instructions,
      }),
    );
    expect(second.errors).toEqual([]);
    expect(second.threadId).toBe(first.threadId);
    expect(second.finalMessage).toBe('hello.txt says hello.');
    const resumed = JSON.stringify(upstream.requests[5]?.body?.contents);
    expect(resumed).toContain('ls no-such-file');
    expect(resumed).toContain('Created hello.txt and committed it.');
    expect(resumed).toContain('Now print hello.txt.');
    expect(upstream.remaining()).toBe(0);

    expect(await searchSandbox(runtime, sandbox.id, gateway.workerToken, FIND_IN_PROCESSES)).not.toBe('0');
    expect(await searchSandbox(runtime, sandbox.id, REAL_KEY, FIND_IN_PROCESSES)).toBe('0');
    expect(await searchSandbox(runtime, sandbox.id, REAL_KEY, FIND_IN_FILES)).toBe('');
    await runtime.exec(
      sandbox.id,
      ['sh', '-c', 'printf %s "$AGENT_RUNNER_GATEWAY_TOKEN" > /tmp/probe-token'],
      { timeoutMs: 10_000 },
    );
    expect(await searchSandbox(runtime, sandbox.id, gateway.workerToken, FIND_IN_FILES)).toContain(
      '/tmp/probe-token',
    );
  }, 300_000);

  it('another model (in the path), another route or query is refused; the pinned route passes', async () => {
    const upstream = await upstreamOf([{ text: 'canary answer' }]);
    const budget = switchableBudget();
    const { sandbox } = await geminiSandbox(upstream, budget);
    const body = { contents: [{ role: 'user', parts: [{ text: 'x' }] }] };
    const lines = await probeRequests(runtime, sandbox.id, 'x-goog-api-key', [
      { target: '/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse', body },
      { target: `/gemini/v1beta/models/${MODEL}:generateContent`, body },
      { target: `/gemini/v1beta/models/${MODEL}:streamGenerateContent`, body },
      { target: '/gemini/v1beta/models', body },
      { target: `/gemini/v1beta/models/${MODEL}:countTokens?alt=sse`, body },
      { target: `/gemini/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, body, key: 'not-the-token' },
      { target: `/gemini/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, body },
    ]);
    expect(lines).toHaveLength(7);
    expect(lines.slice(0, 5).map((line) => line.split(' ')[1])).toEqual(['403', '403', '403', '403', '403']);
    expect(lines[5]?.split(' ')[1]).toBe('401');
    expect(lines[6]).toMatch(/ 200 /);
    expect(upstream.requests.map((seen) => seen.target)).toEqual([ROUTE]);
    // Once the budget is spent, the same legitimate request is refused before it leaves.
    budget.spend();
    const [afterBudget] = await probeRequests(runtime, sandbox.id, 'x-goog-api-key', [
      { target: `/gemini${ROUTE}`, body },
    ]);
    expect(afterBudget).toMatch(/ 403 .*budget/);
    expect(upstream.requests).toHaveLength(1);
  }, 120_000);

  it('a refused key ends the run in seconds with one message naming the worker and the fix', async () => {
    const refused = { status: 401, error: 'API key not valid' } as const;
    const upstream = await upstreamOf([refused, refused, refused, refused]);
    const { gateway, worker, request } = await geminiSandbox(upstream);
    const started = Date.now();
    const result = await new GatewayMeteredWorker(worker, gateway).run(request('Anything.'));
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(result.failed).toBe(true);
    expect(result.providerFailure?.message).toMatch(
      /^The gemini worker's model at .* answered HTTP 401; it refused the key/,
    );
  }, 120_000);
});
