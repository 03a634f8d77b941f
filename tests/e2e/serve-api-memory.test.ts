/**
 * `agent-runner serve`'s memory stays bounded when clients ask for a long journal's events and never read
 * them: the server waits on the full socket instead of buffering the journal. Timed (it bounds this process's
 * memory, so nothing else may run beside it): kept apart from serve-api.test.ts.
 */
import { once } from 'node:events';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveDemoRepo, type ServedRepo } from '../support/serve-repo.js';

let served: ServedRepo;

beforeAll(async () => {
  served = await serveDemoRepo();
}, 60_000);

afterAll(async () => {
  await served?.close();
});

describe('the server with clients that never read', () => {
  it("keeps its memory bounded when clients never read a long journal's events", async () => {
    // 100 MB of journal: served whole into memory, five such watchers would add 500 MB.
    const runDir = path.join(served.repo, '.agent-runner', 'runs', 'BIG-JOURNAL');
    mkdirSync(runDir, { recursive: true });
    const line = `${JSON.stringify({ type: 'worker_event', run: 1, event: { kind: 'message', text: 'x'.repeat(1000) }, at: '2026-01-01T00:00:00.000Z' })}\n`;
    writeFileSync(path.join(runDir, 'events.jsonl'), line.repeat(Math.ceil((100 * 1024 ** 2) / line.length)));
    const { port } = new URL(served.server.info.url);
    const before = process.memoryUsage().rss;
    const sockets = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const socket = connect(Number(port), '127.0.0.1');
        await once(socket, 'connect');
        // It asks, then never reads a byte: the kernel's buffers fill and the server must wait.
        socket.pause();
        socket.write(
          `GET /api/tasks/BIG-JOURNAL/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${served.server.info.token}\r\n\r\n`,
        );
        return socket;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const grown = process.memoryUsage().rss - before;
    // The server still answers meanwhile.
    expect((await served.client.request<{ openapi: string }>('GET', '/api/openapi.json')).openapi).toBe(
      '3.1.0',
    );
    for (const socket of sockets) socket.destroy();
    rmSync(runDir, { recursive: true, force: true });
    expect(grown / 1024 ** 2).toBeLessThan(100);
  }, 60_000);
});
