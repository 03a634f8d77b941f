/**
 * Nothing but the gateway: each worker CLI beside codex (Claude Code, Gemini CLI, Qwen Code, OpenCode) runs a
 * real task step in the real sandbox under the `allowlist` policy with no host allowed, traced with strace
 * (`connect` system calls of every process it starts). Telemetry, auto-update, model catalogues and plugin
 * installs would show as a connect() to an address other than the relay (127.0.0.1:8787), whether the CLI
 * goes direct or through the proxy variables; the egress proxy's log shows every proxied attempt. The probe
 * first proves it sees such a connection: a direct connect() and a proxied request from inside the sandbox.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxRuntime, WorkerAdapter } from '../../src/core/ports.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { VERSION } from '../../src/version.js';
import { ClaudeWorkerAdapter } from '../../src/worker/claude-adapter.js';
import { GeminiWorkerAdapter } from '../../src/worker/gemini-adapter.js';
import { OpenCodeWorkerAdapter } from '../../src/worker/opencode-adapter.js';
import { QwenWorkerAdapter } from '../../src/worker/qwen-adapter.js';
import { OPENAI_APIS, type OpenAiApi, type WorkerType } from '../../src/worker/worker-kinds.js';
import { ScriptedAnthropicServer } from '../support/scripted-anthropic-server.js';
import { ScriptedGeminiServer } from '../support/scripted-gemini-server.js';
import {
  ScriptedResponsesServer,
  assistantMessage,
  bashCall,
  shellCall,
} from '../support/scripted-responses-server.js';
import { builtWorkerImage } from '../support/worker-image.js';
import { tempDir, workerSandbox } from '../support/worker-sandbox.js';

const MODEL = 'egress-test-model';
const TRACE = '/tmp/agent-runner-egress.trace';
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: VERSION });
let image = '';
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  await runtime.ping();
  // The image with every worker, plus strace (from Debian's packages): a test image of its own.
  const workers = await builtWorkerImage(docker, ['claude', 'gemini', 'qwen', 'opencode']);
  image = `agent-runner-test-strace:${workers.split(':')[1]?.slice(-12) ?? 'latest'}`;
  const exists = await docker
    .getImage(image)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (!exists)
    execFileSync('docker', ['build', '-q', '-t', image, '-'], {
      input: [
        `FROM ${workers}`,
        'USER root',
        'RUN apt-get -o Acquire::Retries=3 update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends strace && rm -rf /var/lib/apt/lists/*',
        'USER 10001:10001',
        '',
      ].join('\n'),
      stdio: ['pipe', 'ignore', 'inherit'],
    });
}, 900_000);

afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});

/**
 * The runtime, with the worker's run (and only it) traced: every connect() of every process, to TRACE. With
 * `--seccomp-bpf` only connect() stops a traced process: stopping at every system call made a Bun binary
 * (opencode, thousands of futex and clock calls) too slow to finish under gVisor, whose ptrace is emulated.
 */
function traced(inner: DockerSandboxRuntime): SandboxRuntime {
  return new Proxy(inner, {
    get(target, property, receiver) {
      // The run is the exec that streams its output to the run's files; the sweeps after it are not traced.
      if (property === 'exec')
        return (...[id, argv, options]: Parameters<DockerSandboxRuntime['exec']>) =>
          options?.stdoutPath === undefined
            ? target.exec(id, argv, options)
            : target.exec(
                id,
                [
                  'strace',
                  '-f',
                  '--seccomp-bpf',
                  '-qq',
                  '-e',
                  'trace=connect',
                  '-e',
                  'signal=none',
                  '-o',
                  TRACE,
                  ...argv,
                ],
                options,
              );
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Every connect() of the trace to something other than the relay or a local unix socket. */
function outsideConnects(trace: string): string[] {
  return trace
    .split('\n')
    .filter((line) => line.includes('connect('))
    .filter((line) => !line.includes('sa_family=AF_UNIX'))
    .filter((line) => !/sin_port=htons\(8787\), sin_addr=inet_addr\("127\.0\.0\.1"\)/.test(line));
}

async function readTrace(sandboxId: string): Promise<string> {
  // Only the connect() lines, and only the distinct ones: the output kept of an exec is bounded.
  const result = await runtime.exec(
    sandboxId,
    ['sh', '-c', `grep -o 'connect(.*' ${TRACE} | sed 's/^connect([0-9]*, /connect(/' | sort | uniq -c`],
    { timeoutMs: 10_000 },
  );
  return result.stdoutTail;
}

interface Case {
  name: string;
  type: WorkerType;
  protocol?: OpenAiApi;
  upstream: () => Promise<{ baseUrl: string }>;
  adapter: (wiring: { baseUrl: string; token: string; home: string }, run: SandboxRuntime) => WorkerAdapter;
}

const withClose = <T extends { close(): Promise<void> }>(server: T): T => {
  closers.push(() => server.close());
  return server;
};

const CASES: Case[] = [
  {
    name: 'claude',
    type: 'claude',
    upstream: async () => {
      const server = withClose(
        await new ScriptedAnthropicServer([{ bash: 'echo hi > hi.txt' }, { text: 'Done.' }]).start(),
      );
      return { baseUrl: server.origin };
    },
    adapter: ({ baseUrl, token, home }, run) =>
      new ClaudeWorkerAdapter(run, { model: MODEL, baseUrl, apiKey: token, home }),
  },
  {
    name: 'gemini',
    type: 'gemini',
    upstream: async () => {
      const server = withClose(
        await new ScriptedGeminiServer([{ shell: 'echo hi > hi.txt' }, { text: 'Done.' }]).start(),
      );
      return { baseUrl: server.origin };
    },
    adapter: ({ baseUrl, token, home }, run) =>
      new GeminiWorkerAdapter(run, { model: MODEL, baseUrl, apiKey: token, home }),
  },
  // Both OpenAI APIs: over Chat Completions, opencode's provider package must come from the binary, not npm.
  ...OPENAI_APIS.flatMap((api): Case[] => [
    {
      name: `qwen over ${api}`,
      type: 'qwen',
      protocol: api,
      upstream: async () => {
        const server = withClose(
          await new ScriptedResponsesServer([
            { kind: 'output', items: [shellCall('echo hi > hi.txt')] },
            { kind: 'output', items: [assistantMessage('Done.')] },
          ]).start(),
        );
        return { baseUrl: server.baseUrl('127.0.0.1') };
      },
      adapter: ({ baseUrl, token, home }, run) =>
        new QwenWorkerAdapter(run, { model: MODEL, baseUrl, apiKey: token, home, api }),
    },
    {
      name: `opencode over ${api}`,
      type: 'opencode',
      protocol: api,
      upstream: async () => {
        const server = withClose(
          await new ScriptedResponsesServer([
            { kind: 'output', items: [bashCall('echo hi > hi.txt')] },
            { kind: 'output', items: [assistantMessage('Done.')] },
          ]).start(),
        );
        return { baseUrl: server.baseUrl('127.0.0.1') };
      },
      adapter: ({ baseUrl, token, home }, run) =>
        new OpenCodeWorkerAdapter(run, { model: MODEL, baseUrl, apiKey: token, home, api }),
    },
  ]),
];

describe('under allowlist, a worker CLI contacts nothing but the gateway', () => {
  it('the probe sees what it looks for: a direct connect() and a proxied request', async () => {
    const log: string[] = [];
    const { sandbox } = await workerSandbox(runtime, {
      image,
      type: 'claude',
      upstream: { baseUrl: 'http://127.0.0.1:9', apiKey: 'unused' },
      model: MODEL,
      network: 'allowlist',
      onLog: (line) => log.push(line),
      adapter: ({ baseUrl, token, home }) =>
        new ClaudeWorkerAdapter(runtime, { model: MODEL, baseUrl, apiKey: token, home }),
    });
    const probe = String.raw`
const net = require('net'), http = require('http');
net.connect(443, '93.184.216.34').on('error', () => {});
http.request({ host: '127.0.0.1', port: 8787, method: 'CONNECT', path: 'telemetry.example.com:443' })
  .on('connect', () => process.exit(0)).on('response', () => process.exit(0)).on('error', () => process.exit(0)).end();
setTimeout(() => process.exit(0), 3000);
`;
    const ran = await traced(runtime).exec(sandbox.id, ['node', '-e', probe], {
      timeoutMs: 20_000,
      stdoutPath: path.join(tempDir('egress-probe-'), 'out.log'),
    });
    const trace = await readTrace(sandbox.id);
    expect(ran.exitCode, ran.stderrTail).toBe(0);
    expect(outsideConnects(trace).some((line) => line.includes('93.184.216.34'))).toBe(true);
    expect(log, log.join('\n')).toContainEqual(
      expect.stringContaining('proxy refused CONNECT telemetry.example.com:443'),
    );
  }, 120_000);

  it.each(CASES)(
    '$name',
    async ({ type, protocol, upstream, adapter }) => {
      const log: string[] = [];
      const run = traced(runtime);
      const { sandbox, worker, request } = await workerSandbox(runtime, {
        image,
        type,
        ...(protocol ? { protocol } : {}),
        upstream: { ...(await upstream()), apiKey: 'sk-egress-test' },
        model: MODEL,
        network: 'allowlist',
        onLog: (line) => log.push(line),
        adapter: (wiring) => adapter(wiring, run),
      });
      const result = await worker.run(request('Create hi.txt.'));
      expect(result.errors).toEqual([]);
      const trace = await readTrace(sandbox.id);
      // The trace saw the worker's own model calls (to the relay), so it traced the right processes.
      expect(trace).toMatch(/sin_port=htons\(8787\), sin_addr=inet_addr\("127\.0\.0\.1"\)/);
      expect(outsideConnects(trace)).toEqual([]);
      expect(log.filter((line) => line.startsWith('proxy') || line.startsWith('registry'))).toEqual([]);
    },
    300_000,
  );
});
