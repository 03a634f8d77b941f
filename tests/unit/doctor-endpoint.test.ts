import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkEndpoint, probeUrl, type ProbeResult } from '../../src/doctor/endpoint-check.js';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

const base = {
  name: 'Meta endpoint',
  baseUrl: 'http://127.0.0.1:1/v1',
  apiKeyEnv: 'MY_KEY',
  baseUrlSetting: 'meta.baseUrl',
  apiKeySetting: 'meta.apiKeyEnv',
};
const answers = (status: number) => async (): Promise<ProbeResult> => ({ reachable: true, status });
const refuses = async (): Promise<ProbeResult> => ({ reachable: false, reason: 'ECONNREFUSED' });

describe('checkEndpoint', () => {
  it('passes with the key set and any HTTP answer, without printing the key', async () => {
    const check = await checkEndpoint({ ...base, env: { MY_KEY: 'secret-value' }, probe: answers(401) });
    expect(check).toEqual({
      name: 'Meta endpoint',
      ok: true,
      detail: 'http://127.0.0.1:1/v1 answers HTTP 401; MY_KEY is set',
    });
  });

  it('fails with a fix naming the variable when the key is missing', async () => {
    const check = await checkEndpoint({ ...base, env: { MY_KEY: '' }, probe: answers(200) });
    expect(check.ok).toBe(false);
    expect(check.detail).toContain('MY_KEY is not set');
    expect(check.fix).toContain('export MY_KEY=<your key>');
    expect(check.fix).not.toContain('meta.baseUrl');
  });

  it('fails with a fix naming the URL setting when the endpoint is unreachable', async () => {
    const check = await checkEndpoint({ ...base, env: { MY_KEY: 'k' }, probe: refuses });
    expect(check.ok).toBe(false);
    expect(check.detail).toContain('unreachable: ECONNREFUSED');
    expect(check.fix).toContain('meta.baseUrl');
    expect(check.fix).not.toContain('export');
  });
});

describe('probeUrl', () => {
  it('counts any HTTP status as reachable', async () => {
    const url = await listen(
      createServer((_request, response) => {
        response.writeHead(500);
        response.end('boom');
      }),
    );
    expect(await probeUrl(url)).toEqual({ reachable: true, status: 500 });
  });

  it('reports a refused connection', async () => {
    const server = createServer();
    const url = await listen(server);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const result = await probeUrl(url);
    expect(result).toMatchObject({ reachable: false, reason: expect.stringContaining('ECONNREFUSED') });
  });

  it('gives up on a server that never answers', async () => {
    const url = await listen(createServer(() => undefined));
    const started = Date.now();
    const result = await probeUrl(url, 200);
    expect(result).toEqual({ reachable: false, reason: 'no answer within 200 ms' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
