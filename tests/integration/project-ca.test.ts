/**
 * A project Dockerfile behind a TLS-inspecting proxy, on a real engine: an HTTPS server on the host whose
 * certificate is signed by a CA made here (openssl), reached by a multi-stage Dockerfile's RUN steps. Without the
 * bundle the build fails on the certificate and the message's advice names sandbox.extraCaCert; with
 * sandbox.extraCaCert (the same bundle), every stage trusts it and the build fetches over HTTPS.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { LOCAL_BASE_IMAGE } from '../../src/sandbox/image-builder.js';
import { caOfFile } from '../../src/toolchain/extra-ca.js';
import { resolveTaskImage } from '../../src/toolchain/toolchain-image.js';

const docker = createDockerClient();
const dir = mkdtempSync(path.join(tmpdir(), 'ar-project-ca-'));
const built: string[] = [];
let server: Server;
let url = '';

/** The host's address on Docker's default bridge (where build containers reach it): docker0's own. */
function bridgeGateway(): string {
  const shown = execFileSync('ip', ['-4', '-o', 'addr', 'show', 'docker0'], { encoding: 'utf8' });
  const address = /inet (\d+\.\d+\.\d+\.\d+)\//.exec(shown)?.[1];
  if (!address) throw new Error(`no IPv4 address on docker0: ${shown}`);
  return address;
}

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

beforeAll(async () => {
  // Containers reach the host at the bridge's gateway: the certificate names that address.
  const gateway = bridgeGateway();
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=agent-runner test proxy CA',
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    `/CN=${gateway}`,
  );
  writeFileSync(path.join(dir, 'san.ext'), `subjectAltName=IP:${gateway}\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'san.ext',
  );
  server = createServer(
    { key: readFileSync(path.join(dir, 'server.key')), cert: readFileSync(path.join(dir, 'server.crt')) },
    (_request, response) => response.end('fetched through the proxy\n'),
  );
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  url = `https://${gateway}:${(server.address() as AddressInfo).port}/hello`;
});

afterAll(async () => {
  server?.close();
  for (const tag of built)
    await docker
      .getImage(tag)
      .remove({ force: true })
      .catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

function projectRepo(): string {
  const repo = mkdtempSync(path.join(tmpdir(), 'ar-project-ca-repo-'));
  const fetch = `python3 -c "import urllib.request; print(urllib.request.urlopen('${url}', timeout=10).read().decode(), end='')"`;
  mkdirSync(path.join(repo, 'docker'));
  writeFileSync(
    path.join(repo, 'docker', 'Dockerfile'),
    [
      `FROM ${LOCAL_BASE_IMAGE} AS fetch`,
      `RUN ${fetch} > /hello.txt`,
      `FROM ${LOCAL_BASE_IMAGE}`,
      'COPY --from=fetch /hello.txt /hello.txt',
      `RUN ${fetch} > /again.txt`,
      '',
    ].join('\n'),
  );
  return repo;
}

describe('a project Dockerfile behind a TLS-inspecting proxy', () => {
  it('fails without the bundle, with advice that names sandbox.extraCaCert', async () => {
    const repo = projectRepo();
    const config = validateConfig([
      { source: 'test', values: { sandbox: { dockerfile: 'docker/Dockerfile' } } },
    ]);
    const error = await resolveTaskImage({
      docker,
      config,
      repoRoot: repo,
      workerImage: LOCAL_BASE_IMAGE,
      extraCa: null,
      buildWorkerOn: async (base) => base,
    }).then(
      () => null,
      (caught: unknown) => caught as Error,
    );
    rmSync(repo, { recursive: true, force: true });
    expect(error?.message).toMatch(/CERTIFICATE_VERIFY_FAILED|certificate verify failed/);
    expect(error?.message).toContain('sandbox.extraCaCert: PATH');
  });

  it('with sandbox.extraCaCert every stage trusts it: the build fetches over HTTPS in both stages', async () => {
    const repo = projectRepo();
    const config = validateConfig([
      { source: 'test', values: { sandbox: { dockerfile: 'docker/Dockerfile' } } },
    ]);
    const lines: string[] = [];
    const plan = await resolveTaskImage({
      docker,
      config,
      repoRoot: repo,
      workerImage: LOCAL_BASE_IMAGE,
      extraCa: await caOfFile(path.join(dir, 'ca.crt')),
      buildWorkerOn: async (base) => base,
      onProgress: (line) => lines.push(line),
    });
    built.push(plan.image);
    expect(lines.join('\n')).toContain('its stages trust the extra CA bundle');
    const out = execFileSync('docker', ['run', '--rm', plan.image, 'cat', '/hello.txt', '/again.txt'], {
      encoding: 'utf8',
    });
    expect(out).toBe('fetched through the proxy\nfetched through the proxy\n');
    // The person's directory got nothing: the bundle and the Dockerfile went in the context stream.
    expect(execFileSync('ls', ['-A', path.join(repo, 'docker')], { encoding: 'utf8' })).toBe('Dockerfile\n');
    rmSync(repo, { recursive: true, force: true });
  });
});
