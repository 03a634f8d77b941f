/**
 * The gateway's resources stay bounded whatever the worker does on its socket: connections past
 * `gateway.maxConnections` wait in a bounded queue and are served as slots free; past the queue (or its wait)
 * they are dropped, so a flood of 20,000 leaves the runner's descriptors bounded and it still answers; and an
 * answer the worker does not read stops the upstream instead of growing the runner's memory.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import net, { type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ConnectionGate } from '../../src/gateway/connection-gate.js';
import { DEFAULT_GATEWAY_LIMITS, ModelGateway, type GatewayLimits } from '../../src/gateway/model-gateway.js';

const openDescriptors = () => readdirSync('/proc/self/fd').length;
const FLOOD_SCRIPT = fileURLToPath(new URL('../fixtures/flood/connection-flood.mjs', import.meta.url));

async function startGateway(
  upstream: string,
  maxConnections: number,
  limits: Partial<GatewayLimits> = {},
  log: string[] = [],
): Promise<ModelGateway> {
  const gateway = await ModelGateway.start({
    worker: { baseUrl: upstream, apiKey: 'sk-worker-real-key-abcdefghijklmnop' },
    limits: { maxConnections, requestsPerMinute: 10_000, ...limits },
    onLog: (line) => log.push(line),
  });
  onTestFinished(() => gateway.close());
  return gateway;
}

/** An upstream that streams `chunks` SSE chunks of 64 KiB as fast as its client takes them; counts what it sent. */
async function startFloodingUpstream(chunks: number) {
  const state = { sent: 0, finished: false };
  const payload = `data: ${'x'.repeat(64 * 1024 - 8)}\n\n`;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const pump = () => {
        while (state.sent < chunks) {
          state.sent += 1;
          if (!response.write(payload)) return void response.once('drain', pump);
        }
        state.finished = true;
        response.end();
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, state };
}

function connect(socketPath: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** A model request on the worker's socket; resolves with the status once the head arrives. */
function request(socketPath: string, token: string, options: { read: boolean }) {
  return new Promise<{ status: number; response: http.IncomingMessage }>((resolve, reject) => {
    const req = http.request(
      {
        socketPath,
        path: '/v1/responses',
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
      (response) => {
        if (options.read) response.resume();
        else response.pause();
        resolve({ status: response.statusCode ?? 0, response });
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'm', input: 'hi', stream: true }));
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('gateway resources', () => {
  it('queues connections past gateway.maxConnections and serves them as slots free; past the queue or its wait, drops them', async () => {
    const upstream = await startFloodingUpstream(1);
    const log: string[] = [];
    const gateway = await startGateway(
      upstream.baseUrl,
      2,
      { connectionQueue: 2, connectionQueueWait: 1_500 },
      log,
    );
    const idle = [await connect(gateway.socketPath), await connect(gateway.socketPath)];
    onTestFinished(() => idle.forEach((socket) => socket.destroy()));
    // Both slots are held: a model request waits in the queue instead of being dropped.
    let answered = 0;
    const waiting = request(gateway.socketPath, gateway.workerToken, { read: true }).then((reply) => {
      answered = reply.status;
      return reply;
    });
    await sleep(400);
    expect(answered).toBe(0);
    expect(gateway.connectionPeak).toEqual({ active: 2, waiting: 1 });
    // A slot frees: the waiting request is served.
    idle[0]?.destroy();
    expect((await waiting).status).toBe(200);

    // The queue (2) full: the next connection is dropped at once, and a waiter past its wait is dropped too.
    const queued = [await connect(gateway.socketPath), await connect(gateway.socketPath)];
    const over = await connect(gateway.socketPath);
    const closedAt = new Map<Socket, number>();
    const began = Date.now();
    for (const socket of [...queued, over]) {
      socket.on('error', () => undefined);
      socket.on('close', () => closedAt.set(socket, Date.now() - began));
    }
    onTestFinished(() => [...queued, over].forEach((socket) => socket.destroy()));
    await sleep(400);
    expect([...closedAt.keys()]).toEqual([over]);
    await sleep(1_500);
    expect(closedAt.size).toBe(3);
    expect(log.filter((line) => line.startsWith('worker connections'))).toEqual([
      'worker connections over gateway.maxConnections (2) with gateway.connectionQueue (2) full: 1 dropped',
      'worker connections waited over gateway.connectionQueueWait (1500 ms) for a slot of gateway.maxConnections (2): 1 gave up waiting',
    ]);
  });

  it('a flood of 20,000 connections held open: descriptors stay bounded by the cap and the queue, and it still answers', async () => {
    const upstream = await startFloodingUpstream(1);
    const log: string[] = [];
    const cap = 16;
    const queue = 64;
    const gateway = await startGateway(upstream.baseUrl, cap, { connectionQueue: queue }, log);
    const before = openDescriptors();
    let mostHeld = 0;
    const sampler = setInterval(() => {
      // Without the bound the process runs out of descriptors: reading /proc then fails too.
      try {
        mostHeld = Math.max(mostHeld, openDescriptors() - before);
      } catch {
        mostHeld = Infinity;
      }
    }, 20);
    onTestFinished(() => clearInterval(sampler));
    // The worker's side, in a process of its own: 20,000 connections, each held open if the gateway keeps it.
    const flood = spawn(process.execPath, [FLOOD_SCRIPT, gateway.socketPath, '20000'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    onTestFinished(() => {
      flood.kill('SIGKILL');
    });
    const [line] = (await once(createInterface({ input: flood.stdout }), 'line')) as [string];
    clearInterval(sampler);
    mostHeld = Math.max(mostHeld, openDescriptors() - before);
    const result = JSON.parse(line) as { made: number; open: number; ms: number };
    console.log(`flood: ${JSON.stringify(result)}, at most ${mostHeld} descriptors held by the gateway`);
    // The gateway's ends of what it holds (cap + queue), and a few being accepted and closed; without the
    // bound, it runs into EMFILE and stops accepting (the flood then ends short).
    expect(mostHeld).toBeLessThanOrEqual(cap + queue + 32);
    // The probe: all 20,000 were made, and what the gateway kept is held open by the flood and counted here.
    expect(result.made).toBe(20_000);
    expect(result.open).toBe(cap + queue);
    expect(gateway.connectionPeak).toEqual({ active: cap, waiting: queue });
    expect(mostHeld).toBeGreaterThanOrEqual(cap + queue);
    expect(log).toContain(
      `worker connections over gateway.maxConnections (${cap}) with gateway.connectionQueue (${queue}) full: 1000 dropped`,
    );
    // Once the flood ends, a worker request is answered.
    flood.stdin.end();
    await once(flood, 'exit');
    await sleep(100);
    const answered = await request(gateway.socketPath, gateway.workerToken, { read: true });
    expect(answered.status).toBe(200);
  }, 120_000);

  it("a request sent too slowly is still cut by the HTTP server's request timeouts behind the gate", async () => {
    const server = http.createServer(
      { headersTimeout: 1_000, requestTimeout: 1_000, connectionsCheckingInterval: 200 },
      (_request, response) => response.end('ok'),
    );
    const gate = ConnectionGate.serving(
      server,
      { ...DEFAULT_GATEWAY_LIMITS, maxConnections: 2 },
      () => undefined,
    );
    const dir = mkdtempSync(path.join(tmpdir(), 'gate-'));
    const socketPath = path.join(dir, 'gate.sock');
    await new Promise<void>((resolve) => gate.server.listen(socketPath, resolve));
    onTestFinished(() => {
      rmSync(dir, { recursive: true, force: true });
      return new Promise<void>((resolve) => gate.server.close(() => resolve()));
    });
    const slow = await connect(socketPath);
    onTestFinished(() => {
      slow.destroy();
    });
    let answer = '';
    slow.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    slow.write('GET / HTTP/1.1\r\nhost: x\r\n');
    const closed = await Promise.race([once(slow, 'close').then(() => true), sleep(5_000).then(() => false)]);
    expect(closed, 'the slow request was not cut within 5 s').toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    // The probe: a whole request on the same gate is answered.
    const whole = await connect(socketPath);
    onTestFinished(() => {
      whole.destroy();
    });
    whole.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    const [reply] = (await once(whole, 'data')) as [Buffer];
    expect(reply.toString()).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('an idle CONNECT tunnel is closed after gateway.idleTimeout, freeing its slot; a busy one stays', async () => {
    const echo = net.createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => echo.close(() => resolve())));
    const target = `127.0.0.1:${(echo.address() as AddressInfo).port}`;
    const log: string[] = [];
    const gateway = await startGateway('http://127.0.0.1:9/v1', 2, { idleTimeout: 600 }, log);
    gateway.setEgressAllowlist(['127.0.0.1']);
    const tunnel = async () => {
      const socket = await connect(gateway.socketPath);
      onTestFinished(() => {
        socket.destroy();
      });
      socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`);
      const [head] = (await once(socket, 'data')) as [Buffer];
      expect(head.toString()).toMatch(/^HTTP\/1\.1 200 /);
      return socket;
    };
    const idle = await tunnel();
    const busy = await tunnel();
    let echoed = '';
    busy.on('data', (chunk: Buffer) => (echoed += chunk.toString()));
    const beat = setInterval(() => busy.write('.'), 150);
    onTestFinished(() => clearInterval(beat));
    const began = Date.now();
    const closed = await Promise.race([once(idle, 'close').then(() => true), sleep(5_000).then(() => false)]);
    expect(closed, 'the idle tunnel was not closed within 5 s').toBe(true);
    const idleFor = Date.now() - began;
    expect(idleFor).toBeGreaterThanOrEqual(500);
    expect(idleFor).toBeLessThan(3_000);
    await sleep(800);
    clearInterval(beat);
    // The probe: the busy tunnel carried data the whole time, and is still open.
    expect(echoed.length).toBeGreaterThanOrEqual(5);
    expect(busy.destroyed).toBe(false);
    expect(log).toContain(`proxy CONNECT ${target} closed: idle for 600 ms`);
    // Both slots were held (cap 2); the idle one's went back: a third tunnel gets through at once.
    const third = await tunnel();
    expect(third.destroyed).toBe(false);
  });

  it('an answer the worker does not read holds the upstream back, not the runner memory', async () => {
    // 256 MiB offered: buffered in the runner it would show; with backpressure the upstream stalls early.
    const upstream = await startFloodingUpstream(4096);
    const gateway = await startGateway(upstream.baseUrl, 16);
    const unread = await request(gateway.socketPath, gateway.workerToken, { read: false });
    onTestFinished(() => {
      unread.response.destroy();
    });
    expect(unread.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    // The probe: the upstream did start streaming.
    expect(upstream.state.sent).toBeGreaterThan(0);
    // Without backpressure the runner takes it all as fast as it comes (70 MiB and more in 3 s here); with it,
    // what the sockets' buffers hold (about 4 MiB here).
    expect(upstream.state.finished).toBe(false);
    expect(upstream.state.sent * 64).toBeLessThan(16 * 1024);
  });
});
