/**
 * The real codex in the real worker image, talking to the model only through the gateway, under the default
 * gateway-only policy. The scripted upstream listens on this machine's loopback, which the sandbox cannot
 * reach: every reply the worker gets has passed through the gateway (or come from a cassette).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { NetworkPolicy } from '../../src/config/schema.js';
import type { WorkerRunRequest } from '../../src/core/ports.js';
import type { Cassette } from '../../src/gateway/cassette.js';
import { ModelGateway, type ModelGatewayOptions } from '../../src/gateway/model-gateway.js';
import {
  codexProxyOverrides,
  planSandboxNetwork,
  prepareSandboxNetwork,
} from '../../src/gateway/sandbox-network.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { VERSION } from '../../src/version.js';
import { CodexWorkerAdapter } from '../../src/worker/codex-adapter.js';
import { SANDBOX_UID, startGatewaySandbox } from '../support/gateway-sandbox.js';
import { builtWorkerImage } from '../support/worker-image.js';
import {
  ScriptedResponsesServer,
  assistantMessage,
  commandCall,
  type ScriptedReply,
} from '../support/scripted-responses-server.js';

const REAL_KEY = 'sk-gatewaytest-REALKEY-0123456789abcdefXYZ';
const CODEX_HOME = '/codex-home';
const MODEL = 'scripted-test-model';
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: VERSION });
let image = '';
const servers: ScriptedResponsesServer[] = [];

beforeAll(async () => {
  await runtime.ping();
  image = await builtWorkerImage(docker);
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startUpstream(script: ScriptedReply[]): Promise<ScriptedResponsesServer> {
  const server = await new ScriptedResponsesServer(script).start();
  servers.push(server);
  return server;
}

async function startGateway(options: Partial<ModelGatewayOptions> & Pick<ModelGatewayOptions, 'worker'>) {
  const gateway = await ModelGateway.start(options);
  onTestFinished(() => gateway.close());
  return gateway;
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A workspace, a CODEX_HOME and a gateway-only sandbox wired to `gateway`, plus a codex adapter for it. */
async function workerSandbox(gateway: ModelGateway, network: NetworkPolicy = 'gateway-only') {
  const workspace = tempDir('gw-ws-');
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: workspace });
  const codexHome = tempDir('gw-codex-home-');
  for (const dir of [workspace, codexHome]) chownSync(dir, SANDBOX_UID, SANDBOX_UID);
  const plan = planSandboxNetwork(
    { network: 'gateway-only', allowlist: [], setupNetwork: 'gateway-only' },
    [],
  );
  const sandbox = await startGatewaySandbox(runtime, {
    image,
    gateway,
    plan,
    workdir: '/workspace',
    mounts: [
      { hostPath: workspace, containerPath: '/workspace' },
      { hostPath: codexHome, containerPath: CODEX_HOME },
    ],
  });
  await prepareSandboxNetwork(runtime, sandbox.id, gateway, plan, {
    setup: [],
    workdir: '/workspace',
    timeoutMs: 0,
  });
  const worker = new CodexWorkerAdapter(runtime, {
    model: MODEL,
    provider: {
      ...gateway.codexProvider(),
      requestMaxRetries: 0,
      streamMaxRetries: 0,
      streamIdleTimeoutMs: 30_000,
    },
    codexHome: CODEX_HOME,
    codexHomeHostPath: codexHome,
    configOverrides: codexProxyOverrides(network),
  });
  const request = (prompt: string): WorkerRunRequest => ({
    sandboxId: sandbox.id,
    mode: 'exec',
    prompt,
    runDir: tempDir('gw-run-'),
    timeoutMs: 90_000,
    graceMs: 2_000,
  });
  return { sandbox, workspace, codexHome, worker, request };
}

/** Runs bash in the sandbox with `secret` available only through a pipe (never in an argv or the env). */
async function searchSandbox(sandboxId: string, secret: string, script: string): Promise<string> {
  const half = Math.floor(secret.length / 2);
  const result = await runtime.exec(
    sandboxId,
    [
      '/bin/bash',
      '-c',
      `pattern() { printf '%s%s\\n' "$1" "$2"; }\n${script}`,
      'search',
      secret.slice(0, half),
      secret.slice(half),
    ],
    { timeoutMs: 120_000 },
  );
  return `${result.stdoutTail}${result.stderrTail}`.trim();
}

const FIND_IN_PROCESSES =
  'cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" "\\n" | grep -cF -f <(pattern "$1" "$2") || true';
const FIND_IN_FILES =
  'grep -rlsF -D skip --exclude-dir=proc --exclude-dir=sys -f <(pattern "$1" "$2") / 2>/dev/null || true';

describe('codex through the gateway (gateway-only)', () => {
  it('works, sends the real key upstream only, counts usage, and leaves no key in the sandbox', async () => {
    const upstream = await startUpstream([
      {
        kind: 'output',
        items: [commandCall('echo hello > hello.txt', 'call_1')],
        usage: { inputTokens: 100, outputTokens: 10 },
      },
      {
        kind: 'output',
        items: [assistantMessage('Done: created hello.txt')],
        usage: { inputTokens: 200, cachedTokens: 50, outputTokens: 20, reasoningTokens: 5 },
      },
    ]);
    const gateway = await startGateway({
      worker: { baseUrl: upstream.baseUrl('127.0.0.1'), apiKey: REAL_KEY },
    });
    const { sandbox, workspace, codexHome, worker, request } = await workerSandbox(gateway);

    const result = await worker.run(request('Create hello.txt containing hello.'));
    expect(result.errors).toEqual([]);
    expect(result.exitCode).toBe(0);
    expect(readFileSync(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
    expect(result.finalMessage?.trim()).toBe('Done: created hello.txt');
    upstream.assertComplete();
    const calls = upstream.responseRequests();
    expect(calls.map((call) => call.headers.authorization)).toEqual([
      `Bearer ${REAL_KEY}`,
      `Bearer ${REAL_KEY}`,
    ]);

    // Usage: the sums the upstream sent, then nothing until the next requests.
    expect(gateway.takeWorkerUsage()).toEqual({
      inputTokens: 300,
      cachedInputTokens: 50,
      outputTokens: 30,
      reasoningTokens: 5,
    });
    expect(gateway.takeWorkerUsage()).toEqual({
      inputTokens: 0,
      cachedInputTokens: 0,
      outputTokens: 0,
      reasoningTokens: 0,
    });

    // The key is nowhere inside: environment, processes' environ and argv, codex's home, any file.
    // The same searches do find the per-task token (in the environment), so they can fail.
    expect(await searchSandbox(sandbox.id, gateway.workerToken, FIND_IN_PROCESSES)).not.toBe('0');
    expect(await searchSandbox(sandbox.id, REAL_KEY, 'env | grep -cF -f <(pattern "$1" "$2") || true')).toBe(
      '0',
    );
    expect(await searchSandbox(sandbox.id, REAL_KEY, FIND_IN_PROCESSES)).toBe('0');
    expect(await searchSandbox(sandbox.id, REAL_KEY, FIND_IN_FILES)).toBe('');
    // ... while the file search does find a file it should (the relay script, under the gateway's mount).
    expect(await searchSandbox(sandbox.id, 'agent-runner relay: 127.0.0.1:PORT', FIND_IN_FILES)).toBe(
      '/run/agent-runner/relay.cjs',
    );
    // Codex's home (sessions, config) on the host side, and the workspace: no key either.
    expect(execFileSync('find', [codexHome, '-name', 'rollout-*.jsonl'], { encoding: 'utf8' })).not.toBe('');
    const hostGrep = spawnSync('grep', ['-rlF', REAL_KEY, codexHome, workspace], { encoding: 'utf8' });
    expect(hostGrep.status).toBe(1);
  }, 240_000);
});

describe('codex through the gateway (allowlist)', () => {
  it('still talks to the model directly while the proxy variables are set for its commands', async () => {
    const upstream = await startUpstream([
      { kind: 'output', items: [commandCall('env > env.txt; echo "$HTTPS_PROXY" > proxy.txt', 'call_p')] },
      { kind: 'output', items: [assistantMessage('ok')] },
    ]);
    const gateway = await startGateway({
      worker: { baseUrl: upstream.baseUrl('127.0.0.1'), apiKey: REAL_KEY },
    });
    const { workspace, worker, request } = await workerSandbox(gateway, 'allowlist');
    const result = await worker.run(request('Show the proxy.'));
    expect(result.errors).toEqual([]);
    expect(result.finalMessage?.trim()).toBe('ok');
    const env = readFileSync(path.join(workspace, 'env.txt'), 'utf8');
    expect(env).toContain('NO_PROXY=127.0.0.1,localhost');
    expect(env).toContain('npm_config_https_proxy=http://127.0.0.1:8787');
    expect(readFileSync(path.join(workspace, 'proxy.txt'), 'utf8')).toBe('http://127.0.0.1:8787\n');
    upstream.assertComplete();
  }, 240_000);
});

describe('record and replay', () => {
  it('replays a recorded run with no upstream, redacts keys, and names the divergence of a changed request', async () => {
    const cassetteDir = tempDir('gw-cassette-');
    const cassetteFile = path.join(cassetteDir, 'run.cassette.json');
    const planted = 'internal-secret-424242';
    const upstream = await startUpstream([
      {
        kind: 'output',
        items: [commandCall('echo recorded > out.txt', 'call_r1')],
        usage: { inputTokens: 120, outputTokens: 12 },
      },
      {
        kind: 'output',
        // An upstream that leaks a key and a configured secret into its reply.
        items: [assistantMessage(`Wrote out.txt; key ${REAL_KEY} and ${planted}`)],
        usage: { inputTokens: 220, cachedTokens: 20, outputTokens: 22, reasoningTokens: 2 },
      },
    ]);
    const recording = await startGateway({
      worker: { baseUrl: upstream.baseUrl('127.0.0.1'), apiKey: REAL_KEY },
      mode: { kind: 'record', file: cassetteFile },
      redactPatterns: ['internal-secret-\\d+'],
    });
    const first = await workerSandbox(recording);
    const recorded = await first.worker.run(first.request('Write out.txt.'));
    expect(recorded.errors).toEqual([]);
    expect(readFileSync(path.join(first.workspace, 'out.txt'), 'utf8')).toBe('recorded\n');
    await recording.close();

    const text = readFileSync(cassetteFile, 'utf8');
    expect(text).not.toContain(REAL_KEY);
    expect(text).not.toContain(planted);
    expect(text).not.toContain(recording.workerToken);
    expect(text).toContain('Wrote out.txt; key [REDACTED] and [REDACTED]');
    const cassette = JSON.parse(text) as Cassette;
    expect(cassette.exchanges.map((exchange) => [exchange.kind, exchange.index, exchange.path])).toEqual([
      ['worker', 0, '/responses'],
      ['worker', 1, '/responses'],
    ]);

    // Replay: the upstream is gone, the sandbox and workspace are new; the same run gets the same replies.
    await upstream.close();
    const deadUpstream = `http://127.0.0.1:${await closedPort()}/v1`;
    const replaying = await startGateway({
      worker: { baseUrl: deadUpstream, apiKey: undefined },
      mode: { kind: 'replay', file: cassetteFile },
      redactPatterns: ['internal-secret-\\d+'],
    });
    const second = await workerSandbox(replaying);
    const replayed = await second.worker.run(second.request('Write out.txt.'));
    expect(replaying.takeDivergence()?.message).toBeUndefined();
    expect(replayed.errors).toEqual([]);
    expect(readFileSync(path.join(second.workspace, 'out.txt'), 'utf8')).toBe('recorded\n');
    expect(replayed.finalMessage?.trim()).toBe('Wrote out.txt; key [REDACTED] and [REDACTED]');
    expect(replayed.commands.map((command) => command.command)).toEqual(
      recorded.commands.map((command) => command.command),
    );
    expect(replaying.replayRemaining()).toEqual({ worker: 0, meta: 0 });
    expect(replaying.takeWorkerUsage()).toEqual({
      inputTokens: 340,
      cachedInputTokens: 20,
      outputTokens: 34,
      reasoningTokens: 2,
    });

    // A changed request: the run fails with the divergence, which names the call and what differed.
    const diverging = await startGateway({
      worker: { baseUrl: deadUpstream, apiKey: undefined },
      mode: { kind: 'replay', file: cassetteFile },
    });
    const third = await workerSandbox(diverging);
    const changed = await third.worker.run(third.request('Write another file.'));
    expect(changed.failed).toBe(true);
    const divergence = diverging.takeDivergence();
    expect(divergence?.divergence).toMatchObject({ kind: 'worker', index: 0 });
    expect(divergence?.message).toContain('diverged at worker call #1 (POST /responses)');
    expect(divergence?.message).toContain('"Write out.txt."');
    expect(divergence?.message).toContain('"Write another file."');
    expect(changed.errors.join('\n')).toContain('diverged at worker call #1');
  }, 280_000);
});
