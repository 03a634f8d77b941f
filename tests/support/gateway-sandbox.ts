/**
 * Helpers for the gateway tests: a sandbox wired to a ModelGateway the way the runner wires it, a plain HTTP
 * server on this machine (0.0.0.0, so the bridge reaches it), and a small node probe run inside the sandbox
 * to make TCP connections and HTTP requests (the images have node but no curl).
 */
import { testRuntimeSpec } from './test-runtime.js';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, onTestFinished } from 'vitest';
import type { ExecResult, MountSpec, SandboxSpec } from '../../src/core/ports.js';
import type { ModelGateway } from '../../src/gateway/model-gateway.js';
import { gatewaySandboxSpec, type SandboxNetworkPlan } from '../../src/gateway/sandbox-network.js';
import { containerCreateOptions } from '../../src/sandbox/container-options.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import type { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';

export const SANDBOX_UID = 10001;

/** A sandbox created with the gateway's spec; removed and checked gone when the test ends. */
export async function startGatewaySandbox(
  runtime: DockerSandboxRuntime,
  input: {
    image: string;
    gateway: ModelGateway;
    plan: SandboxNetworkPlan;
    mounts?: MountSpec[];
    env?: Record<string, string>;
    workdir?: string;
    /**
     * Plain Docker with the worker's uid as the container's user, as sandboxes were made before the keeper
     * had a uid of its own: the "before" of the relay attack test.
     */
    containerUserIsWorker?: boolean;
  },
): Promise<{ id: string; taskId: string }> {
  const taskId = `gateway-test-${randomUUID().slice(0, 8)}`;
  const gatewaySpec = gatewaySandboxSpec(input.gateway, input.plan);
  const spec: SandboxSpec = {
    taskId,
    repoPath: '/nonexistent-gateway-test',
    image: input.image,
    user: { uid: SANDBOX_UID, gid: SANDBOX_UID },
    mounts: [...(input.mounts ?? []), ...gatewaySpec.mounts],
    workdir: input.workdir ?? '/tmp',
    env: { ...(input.env ?? {}), ...gatewaySpec.env },
    limits: { cpus: 1, memoryBytes: 1024 ** 3, pids: 256 },
    network: gatewaySpec.network,
    keeper: gatewaySpec.keeper,
    ...testRuntimeSpec,
  };
  const info = input.containerUserIsWorker ? await createAsBefore(spec) : await runtime.create(spec);
  onTestFinished(async () => {
    await runtime.remove(info.id);
    expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
  });
  return { id: info.id, taskId };
}

async function createAsBefore(spec: SandboxSpec): Promise<{ id: string }> {
  const options = containerCreateOptions(
    spec,
    { version: '0.0.0-test', pid: process.pid, hostname: 'test' },
    [],
  );
  const container = await createDockerClient().createContainer({
    ...options,
    User: `${spec.user.uid}:${spec.user.gid}`,
  });
  await container.start();
  return { id: container.id };
}

/** An HTTP server on 0.0.0.0 that answers every request with `marker`; closed when the test ends. */
export async function startHostServer(
  marker: string,
): Promise<{ port: number; requests: string[]; bodyBytes: number[] }> {
  const requests: string[] = [];
  const bodyBytes: number[] = [];
  const server: Server = createServer((request, response) => {
    requests.push(`${request.method ?? ''} ${request.url ?? ''}`);
    let size = 0;
    request.on('data', (chunk: Buffer) => (size += chunk.length));
    request.on('end', () => {
      bodyBytes.push(size);
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(marker);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  onTestFinished(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, requests, bodyBytes };
}

/**
 * The probe: `tcp HOST PORT` connects and prints `connected` or the error code; `get URL [TOKEN]` prints
 * the status and body; `proxy-get URL` sends an absolute-form request to the relay (plain HTTP proxying);
 * `proxy-post URL BYTES` does the same with a streamed body of that many bytes;
 * `connect HOST PORT` opens a CONNECT tunnel through the relay and sends a GET inside it.
 */
const PROBE = String.raw`
const net = require('net'), http = require('http');
const [mode, a, b] = process.argv.slice(1);
const done = (text) => { console.log(text); process.exit(0); };
setTimeout(() => done('TIMEOUT'), 8000);
if (mode === 'tcp') {
  const socket = net.connect(Number(b), a);
  socket.on('connect', () => done('connected'));
  socket.on('error', (e) => done('error ' + e.code));
} else if (mode === 'get' || mode === 'proxy-get') {
  const url = new URL(a);
  const options = mode === 'get'
    ? { host: url.hostname, port: url.port, path: url.pathname, headers: b ? { authorization: 'Bearer ' + b } : {} }
    : { host: '127.0.0.1', port: 8787, path: a, headers: { host: url.host } };
  const request = http.request({ ...options, method: 'GET' }, (response) => {
    let body = '';
    response.on('data', (c) => (body += c));
    response.on('end', () => done(response.statusCode + ' ' + body));
  });
  request.on('error', (e) => done('error ' + e.code));
  request.end();
} else if (mode === 'proxy-post') {
  // Streams b bytes (chunked, no Content-Length) until the answer comes; prints the status, the answer and
  // how many bytes had been written by then.
  const url = new URL(a);
  const total = Number(b);
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let sent = 0;
  const request = http.request({ host: '127.0.0.1', port: 8787, path: a, method: 'POST', headers: { host: url.host } }, (response) => {
    let body = '';
    response.on('data', (c) => (body += c));
    response.on('end', () => done(response.statusCode + ' ' + body.trim() + ' | written ' + sent));
  });
  request.on('error', (e) => done('error ' + e.code + ' | written ' + sent));
  const pump = () => {
    while (sent < total) {
      const part = chunk.subarray(0, Math.min(chunk.length, total - sent));
      sent += part.length;
      if (!request.write(part)) return request.once('drain', pump);
    }
    request.end();
  };
  pump();
} else if (mode === 'connect') {
  const request = http.request({ host: '127.0.0.1', port: 8787, method: 'CONNECT', path: a + ':' + b });
  request.on('connect', (response, socket) => {
    if (response.statusCode !== 200) return done('refused ' + response.statusCode);
    socket.write('GET /tunnel HTTP/1.0\r\nHost: ' + a + '\r\nConnection: close\r\n\r\n');
    let body = '';
    socket.on('data', (c) => (body += c));
    socket.on('end', () => done('tunnel ' + body.split('\r\n\r\n').slice(1).join('')));
  });
  request.on('response', (response) => done('refused ' + response.statusCode));
  request.on('error', (e) => done('error ' + e.code));
  request.end();
}
`;

export function probeArgv(...args: string[]): string[] {
  return ['node', '-e', PROBE, ...args];
}

/** Runs the probe in the sandbox and returns its one line of output. */
export async function probe(
  runtime: DockerSandboxRuntime,
  sandboxId: string,
  ...args: string[]
): Promise<string> {
  const result: ExecResult = await runtime.exec(sandboxId, probeArgv(...args), { timeoutMs: 20_000 });
  return result.stdoutTail.trim() || `exit ${result.exitCode}: ${result.stderrTail.trim()}`;
}
