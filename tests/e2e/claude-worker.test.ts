/**
 * The real Claude Code binary in the real worker image, on a real Docker engine, talking to its model only
 * through the gateway (gateway-only: no network interface), which forwards to a scripted server speaking the
 * Anthropic Messages API on this machine's loopback. The sandbox cannot reach that server: every reply the
 * worker gets has passed through the gateway, which swapped the per-task token for the real key.
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
import { ClaudeWorkerAdapter } from '../../src/worker/claude-adapter.js';
import { ScriptedAnthropicServer, type AnthropicTurn } from '../support/scripted-anthropic-server.js';
import { builtWorkerImage } from '../support/worker-image.js';
import {
  FIND_IN_FILES,
  FIND_IN_PROCESSES,
  probeRequests,
  searchSandbox,
  switchableBudget,
  tempDir,
  WORKER_HOME,
  workerSandbox,
} from '../support/worker-sandbox.js';

const REAL_KEY = 'sk-ant-gatewaytest-REALKEY-0123456789abcdefXYZ';
const MODEL = 'claude-scripted-test';
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: VERSION });
let image = '';
const servers: ScriptedAnthropicServer[] = [];

beforeAll(async () => {
  await runtime.ping();
  image = await builtWorkerImage(docker, ['claude']);
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

async function upstreamOf(turns: AnthropicTurn[]): Promise<ScriptedAnthropicServer> {
  const server = await new ScriptedAnthropicServer(turns).start();
  servers.push(server);
  return server;
}

/** A gateway serving claude at its prefix with the real key, a gateway-only sandbox, and the adapter. */
function claudeSandbox(upstream: ScriptedAnthropicServer, budget?: GatewayBudget) {
  return workerSandbox(runtime, {
    ...(budget ? { budget } : {}),
    image,
    type: 'claude',
    upstream: { baseUrl: upstream.origin, apiKey: REAL_KEY },
    model: MODEL,
    adapter: ({ baseUrl, token, home }) =>
      new ClaudeWorkerAdapter(runtime, { model: MODEL, baseUrl, apiKey: token, home }),
  });
}

const search = (sandboxId: string, secret: string, script: string) =>
  searchSandbox(runtime, sandboxId, secret, script);

describe('Claude Code as a worker, through the gateway (gateway-only)', () => {
  it('writes a file, runs a failing and a passing command, commits; then resume continues the same session', async () => {
    const upstream = await upstreamOf([
      { bash: 'printf "hello\\n" > hello.txt', usage: { input: 120, output: 11 } },
      { bash: 'ls no-such-file', usage: { input: 130, output: 12, cacheRead: 40 } },
      { bash: 'grep -q hello hello.txt', usage: { input: 140, output: 13, cacheCreation: 7 } },
      {
        bash: 'git add hello.txt && git -c user.name=w -c user.email=w@e commit -qm "add hello"',
        usage: { input: 150, output: 14 },
      },
      { text: 'Created hello.txt and committed it.', usage: { input: 160, output: 15 } },
      // The resumed run: one command, then its answer.
      { bash: 'cat hello.txt', usage: { input: 200, output: 16 } },
      { text: 'hello.txt says hello.', usage: { input: 210, output: 17 } },
    ]);
    const { gateway, sandbox, workspace, worker, request, events } = await claudeSandbox(upstream);

    const first = await worker.run(request('Create hello.txt containing hello and commit it.'));
    expect(first.errors).toEqual([]);
    expect(first.exitCode).toBe(0);
    expect(first.failed).toBe(false);
    expect(readFileSync(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
    expect(
      execFileSync('git', ['-c', 'safe.directory=*', 'log', '-1', '--format=%s'], {
        cwd: workspace,
        encoding: 'utf8',
      }).trim(),
    ).toBe('add hello');
    // Exit codes: 0 where claude reported no error, the number of "Exit code N" where it did.
    expect(first.commands.map((command) => [command.command, command.exitCode, command.status])).toEqual([
      ['printf "hello\\n" > hello.txt', 0, 'completed'],
      ['ls no-such-file', 2, 'failed'],
      ['grep -q hello hello.txt', 0, 'completed'],
      ['git add hello.txt && git -c user.name=w -c user.email=w@e commit -qm "add hello"', 0, 'completed'],
    ]);
    expect(first.commands[1]?.outputTail).toMatch(/no-such-file/);
    expect(first.finalMessage).toBe('Created hello.txt and committed it.');
    expect(first.threadId).toMatch(/^[0-9a-f-]{36}$/);
    expect(events).toContainEqual({ kind: 'thread_started', threadId: first.threadId });
    expect(events).toContainEqual({
      kind: 'command_finished',
      command: 'ls no-such-file',
      exitCode: 2,
      status: 'failed',
    });

    // Usage: exactly what the upstream sent (input = input + cache creation + cache reads; cached = reads).
    expect(gateway.takeWorkerUsage()).toEqual({
      inputTokens: 120 + 130 + 40 + 140 + 7 + 150 + 160,
      cachedInputTokens: 40,
      outputTokens: 11 + 12 + 13 + 14 + 15,
      reasoningTokens: 0,
    });
    // Upstream saw the real key in claude's own header, the API version and betas passed through, the exact
    // route, and nothing of the per-task token.
    expect(upstream.requests).toHaveLength(5);
    for (const seen of upstream.requests) {
      expect(seen).toMatchObject({ method: 'POST', target: '/v1/messages?beta=true' });
      expect(seen.headers['x-api-key']).toBe(REAL_KEY);
      expect(seen.headers.authorization).toBeUndefined();
      expect(seen.headers['anthropic-version']).toBe('2023-06-01');
      expect(seen.headers['anthropic-beta']).toMatch(/claude-code/);
      expect(seen.body?.model).toBe(MODEL);
      expect(JSON.stringify(seen.headers)).not.toContain(gateway.workerToken);
    }

    const second = await worker.run(
      request('Now print hello.txt.', { mode: 'resume', threadId: first.threadId ?? undefined }),
    );
    expect(second.errors).toEqual([]);
    expect(second.threadId).toBe(first.threadId);
    expect(second.commands.map((command) => [command.command, command.exitCode])).toEqual([
      ['cat hello.txt', 0],
    ]);
    expect(second.finalMessage).toBe('hello.txt says hello.');
    // The resumed request carries the first run's history: its commands and its last answer.
    const resumed = JSON.stringify(upstream.requests[5]?.body?.messages);
    expect(resumed).toContain('ls no-such-file');
    expect(resumed).toContain('Created hello.txt and committed it.');
    expect(resumed).toContain('Now print hello.txt.');
    expect(gateway.takeWorkerUsage()).toMatchObject({ inputTokens: 410, outputTokens: 33 });
    expect(upstream.remaining()).toBe(0);

    // The real key is nowhere inside: environment, processes, any file (claude's state included). The same
    // searches find the per-task token, so they can fail.
    expect(await search(sandbox.id, gateway.workerToken, FIND_IN_PROCESSES)).not.toBe('0');
    expect(await search(sandbox.id, REAL_KEY, FIND_IN_PROCESSES)).toBe('0');
    expect(await search(sandbox.id, REAL_KEY, FIND_IN_FILES)).toBe('');
    // The file search sees a value written to a file (the token, put there from the sandbox's environment).
    await runtime.exec(
      sandbox.id,
      ['sh', '-c', 'printf %s "$AGENT_RUNNER_GATEWAY_TOKEN" > /tmp/probe-token'],
      {
        timeoutMs: 10_000,
      },
    );
    expect(await search(sandbox.id, gateway.workerToken, FIND_IN_FILES)).toContain('/tmp/probe-token');
  }, 300_000);

  it('a hostile request for another model, another route or a changed query is refused; the real one passes', async () => {
    const upstream = await upstreamOf([{ text: 'canary answer' }]);
    const budget = switchableBudget();
    const { gateway, sandbox } = await claudeSandbox(upstream, budget);
    // The probe runs as the worker with the token from the sandbox's own environment.
    const body = (model: string) => ({
      model,
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const lines = await probeRequests(runtime, sandbox.id, 'x-api-key', [
      { target: '/claude/v1/messages?beta=true', body: body('claude-opus-other') },
      { target: '/claude/v1/messages', body: body(MODEL) },
      { target: '/claude/v1/messages?beta=false', body: body(MODEL) },
      { target: '/claude/v1/messages/count_tokens?beta=true', body: body(MODEL) },
      { target: '/claude/v1/models?beta=true', body: body(MODEL) },
      { target: '/claude/../v1/messages?beta=true', body: body(MODEL) },
      { target: '/v1/messages?beta=true', body: body(MODEL) },
      { target: '/claude/v1/messages?beta=true', body: body(MODEL), key: 'not-the-token' },
      { target: '/claude/v1/messages?beta=true', body: body(MODEL) },
    ]);
    const status = (index: number) => lines[index]?.split(' ')[1];
    expect(lines).toHaveLength(9);
    expect(status(0)).toBe('403'); // another model
    expect(status(1)).toBe('403'); // the route without claude's query string
    expect(status(2)).toBe('403'); // another query string
    expect(status(3)).toBe('403'); // count_tokens: not a route claude needs here
    expect(status(4)).toBe('403'); // the model catalogue
    expect(status(5)).toBe('403'); // a traversal
    expect(status(6)).toBe('403'); // codex's prefix does not serve the Messages API
    expect(status(7)).toBe('401'); // a wrong key
    // The canary: the one request claude needs, with the pinned model, reached the upstream.
    expect(lines[8]).toMatch(/^\/claude\/v1\/messages\?beta=true 200 /);
    expect(upstream.requests.map((seen) => [seen.target, seen.body?.model])).toEqual([
      ['/v1/messages?beta=true', MODEL],
    ]);
    expect(upstream.requests[0]?.headers['x-api-key']).toBe(REAL_KEY);
    expect(gateway.takeWorkerUsage()).toMatchObject({ inputTokens: 100, outputTokens: 20 });
    // Once the budget is spent, the same legitimate request is refused before it leaves.
    budget.spend();
    const [afterBudget] = await probeRequests(runtime, sandbox.id, 'x-api-key', [
      { target: '/claude/v1/messages?beta=true', body: body(MODEL) },
    ]);
    expect(afterBudget).toMatch(/^\/claude\/v1\/messages\?beta=true 403 .*budget/);
    expect(upstream.requests).toHaveLength(1);
  }, 120_000);

  it('a refused key ends the run in seconds, with one message naming the worker and the fix', async () => {
    const refused = { status: 401, error: 'invalid x-api-key' } as const;
    const upstream = await upstreamOf([refused, refused, refused, refused]);
    const { gateway, worker, request } = await claudeSandbox(upstream);
    const metered = new GatewayMeteredWorker(worker, gateway);
    const started = Date.now();
    const result = await metered.run(request('Anything.'));
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(result.failed).toBe(true);
    // The first try and claude's two retries, no more.
    expect(upstream.requests).toHaveLength(3);
    expect(result.providerFailure?.message).toMatch(
      /^The claude worker's model at http:\/\/127\.0\.0\.1:\d+ answered HTTP 401; it refused the key: check workers\.claude\.apiKeyEnv/,
    );
    expect(result.providerFailure?.exitCode).toBe(5);
    expect(result.providerFailure?.message).not.toContain(REAL_KEY);
  }, 120_000);

  it('a CLI that exits before its first event (a flag it refuses) ends the run naming the worker and the fix', async () => {
    const upstream = await upstreamOf([]);
    const { sandbox } = await claudeSandbox(upstream);
    const refusing = new ClaudeWorkerAdapter(runtime, {
      model: MODEL,
      baseUrl: 'http://127.0.0.1:8787/claude',
      apiKey: 'x',
      home: `${WORKER_HOME}/claude`,
      extraArgs: ['--no-such-flag-at-all'],
    });
    const result = await refusing.run({
      sandboxId: sandbox.id,
      mode: 'exec',
      prompt: 'anything',
      runDir: tempDir('claude-run-'),
      timeoutMs: 30_000,
      graceMs: 1_000,
    });
    expect(result.failed).toBe(true);
    expect(result.errors).toEqual([
      expect.stringMatching(
        /^claude exited with code [1-9]\d* before its first event: .*no-such-flag-at-all.* Check the flags in workers\.claude\.extraArgs/s,
      ),
    ]);
    expect(upstream.requests).toHaveLength(0);
  }, 120_000);

  it('a binary missing from the image ends the run with one message naming the worker and the fix', async () => {
    const upstream = await upstreamOf([]);
    const { sandbox } = await claudeSandbox(upstream);
    // The image as one without claude: its runs get a PATH without /usr/local/bin, where claude is.
    const withoutClaude = new Proxy(runtime, {
      get(target, property, receiver) {
        if (property === 'exec')
          return (...[id, argv, options]: Parameters<DockerSandboxRuntime['exec']>) =>
            target.exec(id, argv, { ...options, env: { ...options.env, PATH: '/usr/bin:/bin' } });
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const noClaude = new ClaudeWorkerAdapter(withoutClaude, {
      model: MODEL,
      baseUrl: 'http://127.0.0.1:8787/claude',
      apiKey: 'x',
      home: `${WORKER_HOME}/claude`,
    });
    const result = await noClaude.run({
      sandboxId: sandbox.id,
      mode: 'exec',
      prompt: 'anything',
      runDir: tempDir('claude-run-'),
      timeoutMs: 30_000,
      graceMs: 1_000,
    });
    expect(result.failed).toBe(true);
    expect([126, 127]).toContain(result.exitCode);
    expect(result.errors).toEqual([
      expect.stringMatching(/^claude could not be started in the sandbox .*agent-runner image build/),
    ]);
  }, 120_000);
});
