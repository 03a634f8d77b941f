/**
 * The gateway's resources stay bounded whatever the worker does on its socket: connections held open past
 * `gateway.maxConnections` are dropped (the runner's descriptors stay bounded and it still answers), and an
 * answer the worker does not read stops the upstream instead of growing the runner's memory.
 */
import { readdirSync } from 'node:fs';
import http from 'node:http';
import net, { type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ModelGateway } from '../../src/gateway/model-gateway.js';

const openDescriptors = () => readdirSync('/proc/self/fd').length;

async function startGateway(upstream: string, maxConnections: number): Promise<ModelGateway> {
  const gateway = await ModelGateway.start({
    worker: { baseUrl: upstream, apiKey: 'sk-worker-real-key-abcdefghijklmnop' },
    limits: { maxConnections, requestsPerMinute: 10_000 },
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

describe('gateway resources', () => {
  it('drops connections past gateway.maxConnections; descriptors stay bounded and it still answers', async () => {
    const upstream = await startFloodingUpstream(1);
    const gateway = await startGateway(upstream.baseUrl, 16);
    const before = openDescriptors();
    const sockets: Socket[] = [];
    onTestFinished(() => sockets.forEach((socket) => socket.destroy()));
    const closed = new Set<Socket>();
    for (let index = 0; index < 400; index += 1) {
      const socket = await connect(gateway.socketPath);
      socket.on('close', () => closed.add(socket));
      socket.on('error', () => undefined);
      sockets.push(socket);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The probe: 400 client connections were made; the gateway dropped all but its cap.
    expect(sockets).toHaveLength(400);
    expect(closed.size).toBeGreaterThanOrEqual(400 - 16);
    // Our own client ends hold 400 descriptors at most; the gateway's side holds at most its cap.
    const held = openDescriptors() - before;
    expect(held).toBeLessThanOrEqual(400 - closed.size + 16 + 8);
    // Once the held ones go, a worker request is answered.
    sockets.forEach((socket) => socket.destroy());
    await new Promise((resolve) => setTimeout(resolve, 100));
    const answered = await request(gateway.socketPath, gateway.workerToken, { read: true });
    expect(answered.status).toBe(200);
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
