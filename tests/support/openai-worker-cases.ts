/**
 * The cases of tests/e2e/openai-workers-*.test.ts (one file per CLI, so the two run side by side). The workers beside codex that speak OpenAI's APIs, each over both: the real Qwen Code (on its own Node 22)
 * and the real OpenCode (its native binary) in the real worker image, on a real Docker engine, each talking
 * to its model only through the gateway (gateway-only), which forwards to a scripted server on this machine's
 * loopback speaking the Responses API (the wire protocol codex speaks) or streamed Chat Completions
 * (`workers.<type>.api: chat`), at each worker's own prefix with its own key and model.
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
import type { WorkerAdapter } from '../../src/core/ports.js';
import { OpenCodeWorkerAdapter } from '../../src/worker/opencode-adapter.js';
import { QwenWorkerAdapter } from '../../src/worker/qwen-adapter.js';
import { OPENAI_APIS, WORKER_KINDS, type OpenAiApi } from '../../src/worker/worker-kinds.js';
import { commitProjectFileAndMemory, memoryAsTaskReads, occurrences } from './memory-fixture.js';
import {
  ScriptedResponsesServer,
  assistantMessage,
  bashCall,
  shellCall,
  type ResponseOutputItem,
  type ScriptedReply,
} from './scripted-responses-server.js';
import { builtWorkerImage } from './worker-image.js';
import {
  FIND_IN_FILES,
  FIND_IN_PROCESSES,
  probeRequests,
  searchSandbox,
  switchableBudget,
  workerSandbox,
} from './worker-sandbox.js';

/** Registers the tests of one CLI, over both APIs. */
export function describeOpenAiWorker(type: 'qwen' | 'opencode'): void {
  const REAL_KEY = 'sk-responses-gatewaytest-REALKEY-0123456789abcdefXYZ';
  const MODEL = 'responses-scripted-test';

  interface Case {
    type: 'qwen' | 'opencode';
    api: OpenAiApi;
    adapter: (wiring: { baseUrl: string; token: string; home: string }) => WorkerAdapter;
    /** The worker's own shell tool call. */
    shell: (command: string) => ResponseOutputItem;
    /** Its session ids: chosen up front (qwen, a UUID) or given by the CLI (opencode, `ses_...`). */
    session: RegExp;
  }

  const CASES: Case[] = OPENAI_APIS.flatMap((api): Case[] => [
    {
      type: 'qwen',
      api,
      adapter: ({ baseUrl, token, home }) =>
        new QwenWorkerAdapter(runtime, { model: MODEL, baseUrl, apiKey: token, home, api }),
      shell: shellCall,
      session: /^[0-9a-f-]{36}$/,
    },
    {
      type: 'opencode',
      api,
      adapter: ({ baseUrl, token, home }) =>
        new OpenCodeWorkerAdapter(runtime, { model: MODEL, baseUrl, apiKey: token, home, api }),
      shell: bashCall,
      session: /^ses_[0-9A-Za-z]+$/,
    },
  ]);
  /** Each API's route below a worker's `/v1`, and the other one (refused). */
  const ROUTE: Record<OpenAiApi, string> = { responses: '/responses', chat: '/chat/completions' };
  const OTHER: Record<OpenAiApi, OpenAiApi> = { responses: 'chat', chat: 'responses' };
  const docker = createDockerClient();
  const runtime = new DockerSandboxRuntime(docker, { version: VERSION });
  let image = '';
  const servers: ScriptedResponsesServer[] = [];

  beforeAll(async () => {
    await runtime.ping();
    image = await builtWorkerImage(docker, ['qwen', 'opencode']);
  }, 600_000);

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  async function upstreamOf(script: ScriptedReply[]): Promise<ScriptedResponsesServer> {
    const server = await new ScriptedResponsesServer(script).start();
    servers.push(server);
    return server;
  }

  function sandboxOf(worker: Case, upstream: ScriptedResponsesServer, budget?: GatewayBudget) {
    return workerSandbox(runtime, {
      ...(budget ? { budget } : {}),
      image,
      type: worker.type,
      protocol: worker.api,
      upstream: { baseUrl: upstream.baseUrl('127.0.0.1'), apiKey: REAL_KEY },
      model: MODEL,
      adapter: worker.adapter,
    });
  }

  const turn = (
    items: ScriptedReply extends infer R ? (R extends { kind: 'output'; items: infer I } ? I : never) : never,
    input: number,
    output: number,
  ): ScriptedReply => ({
    kind: 'output',
    items,
    usage: { inputTokens: input, outputTokens: output },
  });

  describe.each(CASES.filter((worker) => worker.type === type))(
    '$type over $api as a worker, through the gateway (gateway-only)',
    (cli) => {
      const route = `/${cli.type}/v1${ROUTE[cli.api]}`;
      it('writes a file, runs a failing and a passing command, commits; then resume continues the same session', async () => {
        const upstream = await upstreamOf([
          turn([cli.shell('printf "hello\\n" > hello.txt')], 120, 11),
          turn([cli.shell('ls no-such-file')], 130, 12),
          turn([cli.shell('grep -q hello hello.txt')], 140, 13),
          turn(
            [cli.shell('git add hello.txt && git -c user.name=w -c user.email=w@e commit -qm "add hello"')],
            150,
            14,
          ),
          turn([assistantMessage('Created hello.txt and committed it.')], 160, 15),
          turn([cli.shell('cat hello.txt')], 200, 16),
          turn([assistantMessage('hello.txt says hello.')], 210, 17),
        ]);
        const { gateway, sandbox, workspace, worker, request } = await sandboxOf(cli, upstream);
        // The project's own file (QWEN.md, AGENTS.md) and the memory bank, committed: the run gets them as a
        // task would.
        const memory = commitProjectFileAndMemory(
          workspace,
          WORKER_KINDS[cli.type].projectFiles?.names[0] ?? '',
        );
        const { workerInstructions } = await memoryAsTaskReads(workspace);
        const instructions = workerInstructions[cli.type];

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
        // Both state every command's exit code (qwen in its result, opencode in its bash tool's metadata).
        expect(first.commands.map((command) => [command.command, command.exitCode, command.status])).toEqual([
          ['printf "hello\\n" > hello.txt', 0, 'completed'],
          ['ls no-such-file', 2, 'failed'],
          ['grep -q hello hello.txt', 0, 'completed'],
          [
            'git add hello.txt && git -c user.name=w -c user.email=w@e commit -qm "add hello"',
            0,
            'completed',
          ],
        ]);
        expect(first.finalMessage).toBe('Created hello.txt and committed it.');
        expect(first.threadId).toMatch(cli.session);
        const calls = upstream.responseRequests();
        expect(gateway.takeWorkerUsage()).toEqual({
          inputTokens: 120 + 130 + 140 + 150 + 160,
          cachedInputTokens: 0,
          outputTokens: 11 + 12 + 13 + 14 + 15,
          reasoningTokens: 0,
        });
        expect(calls).toHaveLength(5);
        for (const seen of calls) {
          expect(seen).toMatchObject({ method: 'POST', path: `/v1${ROUTE[cli.api]}` });
          expect(seen.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
          expect((seen.body as { model?: string }).model).toBe(MODEL);
        }

        // The CLI's first request: the project's own file once, then the active entry; no archived one.
        const sent = JSON.stringify(calls[0]?.body);
        expect(sent).toContain(JSON.stringify(instructions.trim()).slice(1, -1));
        expect(occurrences(sent, memory.project)).toBe(1);
        expect(sent.indexOf(memory.project)).toBeLessThan(sent.indexOf(memory.active));
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
        const resumed = JSON.stringify(upstream.responseRequests().map((seen) => seen.body));
        expect(resumed).toContain('ls no-such-file');
        expect(resumed).toContain('Now print hello.txt.');

        expect(await searchSandbox(runtime, sandbox.id, gateway.workerToken, FIND_IN_PROCESSES)).not.toBe(
          '0',
        );
        expect(await searchSandbox(runtime, sandbox.id, REAL_KEY, FIND_IN_PROCESSES)).toBe('0');
        expect(await searchSandbox(runtime, sandbox.id, REAL_KEY, FIND_IN_FILES)).toBe('');
      }, 300_000);

      it('another model, another route or a query is refused; its own route passes', async () => {
        const upstream = await upstreamOf([turn([assistantMessage('canary answer')], 10, 2)]);
        const budget = switchableBudget();
        const { gateway, sandbox } = await sandboxOf(cli, upstream, budget);
        // No `stream_options`: a Chat Completions stream is metered all the same (the gateway asks for its usage).
        const message = [{ role: 'user', content: 'x' }];
        const body = (model: string) =>
          cli.api === 'chat'
            ? { model, messages: message, stream: true }
            : { model, input: message, stream: true };
        const lines = await probeRequests(runtime, sandbox.id, 'authorization', [
          { target: route, body: body('another-model') },
          { target: `/${cli.type}/v1${ROUTE[OTHER[cli.api]]}`, body: body(MODEL) },
          { target: `${route}?stream=true`, body: body(MODEL) },
          { target: `/v1${ROUTE[cli.api]}`, body: body(MODEL) },
          { target: route, body: body(MODEL), key: 'not-the-token' },
          { target: route, body: body(MODEL) },
        ]);
        expect(lines.map((line) => line.split(' ')[1])).toEqual(['403', '403', '403', '403', '401', '200']);
        expect(upstream.responseRequests()).toHaveLength(1);
        expect(gateway.takeWorkerUsage()).toEqual({
          inputTokens: 10,
          cachedInputTokens: 0,
          outputTokens: 2,
          reasoningTokens: 0,
        });
        // Once the budget is spent, the same legitimate request is refused before it leaves.
        budget.spend();
        const [afterBudget] = await probeRequests(runtime, sandbox.id, 'authorization', [
          { target: route, body: body(MODEL) },
        ]);
        expect(afterBudget).toMatch(/ 403 .*budget/);
        expect(upstream.responseRequests()).toHaveLength(1);
      }, 120_000);

      it('a refused key ends the run with one message naming the worker and the fix', async () => {
        const refused: ScriptedReply = {
          kind: 'http_error',
          status: 401,
          message: 'Incorrect API key provided',
        };
        const upstream = await upstreamOf(Array<ScriptedReply>(20).fill(refused));
        const { gateway, worker, request } = await sandboxOf(cli, upstream);
        const started = Date.now();
        const result = await new GatewayMeteredWorker(worker, gateway).run(request('Anything.'));
        expect(Date.now() - started).toBeLessThan(60_000);
        expect(result.failed).toBe(true);
        expect(result.providerFailure?.message).toMatch(
          new RegExp(`^The ${cli.type} worker's model at .* answered HTTP 401; it refused the key`),
        );
      }, 120_000);
    },
  );
}
