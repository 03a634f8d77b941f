/**
 * A worker CLI's sandbox as the runner wires it, for the worker tests: a gateway serving that one worker at its
 * prefix with the real key, a workspace repository with one commit, a worker home, a gateway-only sandbox, and
 * a request builder. Everything is removed (and checked gone) when the test ends.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import type { WorkerAdapter, WorkerEvent, WorkerRunRequest } from '../../src/core/ports.js';
import type { GatewayBudget } from '../../src/gateway/gateway-budget.js';
import type { GatewayWorker, ModelGatewayOptions } from '../../src/gateway/gateway-options.js';
import { ModelGateway } from '../../src/gateway/model-gateway.js';
import { planSandboxNetwork, prepareSandboxNetwork } from '../../src/gateway/sandbox-network.js';
import type { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { WORKER_KINDS, type WorkerProtocol, type WorkerType } from '../../src/worker/worker-kinds.js';
import { SANDBOX_UID, startGatewaySandbox } from './gateway-sandbox.js';

/** Where the worker home is mounted in these sandboxes. */
export const WORKER_HOME = '/worker-home';

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export async function workerSandbox<A extends WorkerAdapter>(
  runtime: DockerSandboxRuntime,
  input: {
    image: string;
    type: WorkerType;
    /** The protocol it speaks (default: its kind's first). */
    protocol?: WorkerProtocol;
    upstream: { baseUrl: string; apiKey: string };
    model: string;
    adapter: (wiring: { baseUrl: string; token: string; home: string }) => A;
    /** The worker's network policy (default gateway-only; allowlist: no host allowed, the proxy variables set). */
    network?: 'gateway-only' | 'allowlist';
    /** The gateway's log lines (the egress proxy's included). */
    onLog?: (line: string) => void;
    /** The task's budget as the gateway sees it (default: none). */
    budget?: GatewayBudget;
    /** The gateway's mode, redaction patterns and caps (default: live, none, the defaults). */
    gateway?: Partial<Pick<ModelGatewayOptions, 'mode' | 'redactPatterns' | 'limits'>>;
  },
) {
  const kind = WORKER_KINDS[input.type];
  const worker: GatewayWorker = {
    type: input.type,
    prefix: kind.prefix,
    protocol: input.protocol ?? kind.protocols[0],
    keyHeader: kind.keyHeader,
    upstream: input.upstream,
    routes: kind.routes([input.model], input.protocol ?? kind.protocols[0]),
    ...(kind.modelInBody ? { allowedModels: [input.model] } : {}),
    model: input.model,
  };
  const gateway = await ModelGateway.start({
    workers: [worker],
    ...(input.onLog ? { onLog: input.onLog } : {}),
    ...(input.budget ? { budget: input.budget } : {}),
    ...input.gateway,
  });
  onTestFinished(() => gateway.close());
  const workspace = tempDir(`${input.type}-ws-`);
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: workspace });
  execFileSync(
    'git',
    ['-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-q', '--allow-empty', '-m', 'base'],
    {
      cwd: workspace,
    },
  );
  const home = tempDir(`${input.type}-home-`);
  execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, workspace]);
  chownSync(home, SANDBOX_UID, SANDBOX_UID);
  const plan = planSandboxNetwork(
    { network: 'gateway-only', allowlist: [], setupNetwork: 'gateway-only' },
    [],
  );
  const sandbox = await startGatewaySandbox(runtime, {
    image: input.image,
    gateway,
    plan,
    workdir: '/workspace',
    mounts: [
      { hostPath: workspace, containerPath: '/workspace' },
      { hostPath: home, containerPath: WORKER_HOME },
    ],
  });
  await prepareSandboxNetwork(runtime, sandbox.id, gateway, plan, {
    setup: [],
    workdir: '/workspace',
    timeoutMs: 0,
  });
  const adapter = input.adapter({
    baseUrl: `${gateway.relayOrigin()}${kind.prefix}`,
    token: gateway.workerToken,
    home: `${WORKER_HOME}/${input.type}`,
  });
  const events: WorkerEvent[] = [];
  const request = (prompt: string, extra: Partial<WorkerRunRequest> = {}): WorkerRunRequest => ({
    sandboxId: sandbox.id,
    mode: 'exec',
    prompt,
    runDir: tempDir(`${input.type}-run-`),
    timeoutMs: 120_000,
    graceMs: 2_000,
    onEvent: (event) => events.push(event),
    ...extra,
  });
  return { gateway, sandbox, workspace, home, worker: adapter, request, events };
}

/** Runs bash in the sandbox with `secret` only on a pipe (never in an argv or the environment). */
export async function searchSandbox(
  runtime: DockerSandboxRuntime,
  sandboxId: string,
  secret: string,
  script: string,
): Promise<string> {
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

export const FIND_IN_PROCESSES =
  'cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" "\\n" | grep -cF -f <(pattern "$1" "$2") || true';
export const FIND_IN_FILES =
  'grep -rlsF -D skip --exclude-dir=proc --exclude-dir=sys -f <(pattern "$1" "$2") / 2>/dev/null || true';

/**
 * Sends POST requests from inside the sandbox as the worker would, with the per-task token from the sandbox's
 * own environment in `keyHeader`; prints `target status body-start` per request.
 */
export async function probeRequests(
  runtime: DockerSandboxRuntime,
  sandboxId: string,
  keyHeader: string,
  requests: { target: string; body: unknown; key?: string }[],
  /** How much of each answer's body is printed. */
  keep = 60,
): Promise<string[]> {
  const script = String.raw`
const http = require('http');
const token = process.env.AGENT_RUNNER_GATEWAY_TOKEN;
const requests = JSON.parse(process.argv[1]);
const header = process.argv[2];
const send = ({ target, body, key }) => new Promise((resolve) => {
  const value = key ?? token;
  const request = http.request({ host: '127.0.0.1', port: 8787, path: target, method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01',
      [header]: header === 'authorization' ? 'Bearer ' + value : value } }, (response) => {
    let text = ''; response.on('data', (c) => (text += c));
    response.on('end', () => resolve(target + ' ' + response.statusCode + ' ' + text.slice(0, Number(process.argv[3])).replace(/\s+/g, ' ')));
  });
  request.on('error', (e) => resolve(target + ' error ' + e.code));
  request.end(JSON.stringify(body));
});
(async () => { const lines = []; for (const r of requests) lines.push(await send(r)); console.log(lines.join('\n')); })();
`;
  const result = await runtime.exec(
    sandboxId,
    ['node', '-e', script, JSON.stringify(requests), keyHeader, String(keep)],
    {
      timeoutMs: 30_000,
    },
  );
  return result.stdoutTail.trim().split('\n');
}

/** A budget the test spends at will: until `spend()`, every request is within it. */
export function switchableBudget(): GatewayBudget & { spend(): void } {
  let spent = false;
  return {
    meterWorker: () => undefined,
    refusal: () => (spent ? 'budget: max tokens 1000 reached (the test spent it)' : null),
    spend: () => {
      spent = true;
    },
  };
}
