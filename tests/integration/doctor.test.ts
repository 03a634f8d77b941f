import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { buildWorkerImage, resolveBaseImage } from '../../src/sandbox/image-builder.js';
import { runCliCaptured } from '../support/cli.js';
import { builtWorkerImage } from '../support/worker-image.js';

const HOST_CA = '/etc/ssl/certs/ca-certificates.crt';
const API_KEY = 'sk-doctor-test-secret';

async function tempDir(prefix: string): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), prefix));
  onTestFinished(() => rm(directory, { recursive: true, force: true }));
  return directory;
}

async function repositoryWithCommit(): Promise<string> {
  const repo = await tempDir('agent-runner-doctor-repo-');
  await execa('git', ['init', '-q', '-b', 'main'], { cwd: repo });
  await writeFile(path.join(repo, 'README.md'), '# test\n');
  await execa('git', ['add', '-A'], { cwd: repo });
  await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'first'], {
    cwd: repo,
  });
  return repo;
}

let server: Server;
let baseUrl: string;

beforeAll(async () => {
  // The doctor's check that the worker image exists needs it built; after scripts/setup.sh this is a reuse.
  const docker = createDockerClient();
  await buildWorkerImage(docker, {
    baseImage: await resolveBaseImage(docker, 'node:22-bookworm-slim'),
    ...(existsSync(HOST_CA) ? { extraCaCertPath: HOST_CA } : {}),
  });
  // The image with claude beside codex, for the per-worker checks (its layers come from setup.sh's image).
  await builtWorkerImage(docker, ['claude']);
  server = createServer((_request, response) => {
    response.writeHead(404, { 'content-type': 'application/json' });
    response.end('{"error":"not found"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}, 1_200_000);

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function environment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    OPENAI_BASE_URL: baseUrl,
    OPENAI_API_KEY: API_KEY,
    ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}),
    ...extra,
  };
}

describe('agent-runner doctor', () => {
  it('passes every check when the engine, the image, the repository and the endpoint are there', async () => {
    const repo = await repositoryWithCommit();
    const result = await runCliCaptured(['doctor'], { cwd: repo, env: environment() });
    expect(result.stdout).toMatch(/^Docker engine\s+ok\s+Docker \d/m);
    expect(result.stdout).toMatch(/^Worker image\s+ok\s+agent-runner-worker:codex-0\.169\.0-[0-9a-f]{12}/m);
    expect(result.stdout).toMatch(new RegExp(`^Git repository\\s+ok\\s+${repo}`, 'm'));
    expect(result.stdout).toMatch(/^Meta endpoint\s+ok\s+.*answers HTTP 404; OPENAI_API_KEY is set/m);
    expect(result.stdout).toMatch(/^Worker endpoint \(codex\)\s+ok\s/m);
    expect(result.stdout).toMatch(/^Worker binary \(codex\)\s+ok\s+codex codex-cli 0\.169\.0 in /m);
    expect(result.stdout).toContain('All checks passed.');
    expect(result.stdout).not.toContain('FAIL');
    expect(result.stdout + result.stderr).not.toContain(API_KEY);
    expect(result.exitCode).toBe(0);
  });

  it('prints the checks as JSON with --json', async () => {
    const repo = await repositoryWithCommit();
    const result = await runCliCaptured(['doctor', '--json'], { cwd: repo, env: environment() });
    const parsed = JSON.parse(result.stdout) as { ok: boolean; checks: { name: string; ok: boolean }[] };
    expect(parsed.ok).toBe(true);
    expect(parsed.checks.map((check) => check.name)).toEqual([
      'Docker engine',
      'Worker image',
      'Worker binary (codex)',
      'Sandbox runtime',
      'Git repository',
      'Toolchain',
      'Set-up',
      'Definition of Done',
      'Disk caps',
      'Meta endpoint',
      'Worker endpoint (codex)',
    ]);
    expect(result.exitCode).toBe(0);
  });

  it('checks each configured worker: its binary in the image, its endpoint and its key', async () => {
    const repo = await repositoryWithCommit();
    const anthropic = baseUrl.replace(/\/v1$/, '');
    await writeFile(
      path.join(repo, 'agent-runner.yaml'),
      `workers:\n  claude:\n    baseUrl: ${anthropic}\n    apiKeyEnv: DOCTOR_ANTHROPIC_KEY\n`,
    );
    const withKey = await runCliCaptured(['doctor'], {
      cwd: repo,
      env: environment({ DOCTOR_ANTHROPIC_KEY: 'sk-ant-doctor-secret' }),
    });
    expect(withKey.stdout).toMatch(/^Worker binary \(claude\)\s+ok\s+claude 2\.1\.330 \(Claude Code\) in /m);
    expect(withKey.stdout).toMatch(/^Worker endpoint \(claude\)\s+ok\s+.*DOCTOR_ANTHROPIC_KEY is set/m);
    expect(withKey.stdout + withKey.stderr).not.toContain('sk-ant-doctor-secret');
    expect(withKey.exitCode).toBe(0);

    // The image without claude (codex alone, named as sandbox.image) and no key: both named, with the fix.
    const codexOnly = (
      await runCliCaptured(['image', 'tag'], { cwd: await repositoryWithCommit(), env: environment() })
    ).stdout.trim();
    await writeFile(
      path.join(repo, 'agent-runner.yaml'),
      `sandbox:\n  image: ${codexOnly}\nworkers:\n  claude:\n    baseUrl: ${anthropic}\n    apiKeyEnv: DOCTOR_ANTHROPIC_KEY\n`,
    );
    const without = await runCliCaptured(['doctor'], { cwd: repo, env: environment() });
    expect(without.stdout).toMatch(/^Worker binary \(claude\)\s+FAIL\s+claude does not run in /m);
    expect(without.stdout).toMatch(/fix: Run `agent-runner image build`/);
    expect(without.stdout).toMatch(/^Worker endpoint \(claude\)\s+FAIL\s+.*DOCTOR_ANTHROPIC_KEY is not set/m);
    expect(without.exitCode).toBe(4);
  });

  it('fails the Docker check with its fix when the engine is not reachable', async () => {
    const repo = await repositoryWithCommit();
    const result = await runCliCaptured(['doctor'], {
      cwd: repo,
      env: environment({ DOCKER_HOST: 'unix:///tmp/nonexistent.sock' }),
    });
    expect(result.stdout).toMatch(
      /^Docker engine\s+FAIL\s+Docker is not reachable at unix:\/\/\/tmp\/nonexistent\.sock/m,
    );
    expect(result.stdout).toMatch(/fix: Start it .*set DOCKER_HOST/);
    expect(result.stdout).toMatch(/^Worker image\s+FAIL\s+not checked/m);
    expect(result.stdout).toMatch(/^Git repository\s+ok/m);
    expect(result.exitCode).toBe(4);
  });

  it('fails the repository check outside a git repository', async () => {
    const directory = await tempDir('agent-runner-doctor-plain-');
    const result = await runCliCaptured(['doctor'], { cwd: directory, env: environment() });
    expect(result.stdout).toMatch(/^Git repository\s+FAIL\s+.* is not inside a git repository/m);
    expect(result.stdout).toContain('fix: Run agent-runner from your project repository');
    expect(result.stdout).toMatch(/^Docker engine\s+ok/m);
    expect(result.exitCode).toBe(4);
  });

  it('fails the toolchain check for a Go version Debian cannot give, and names the Definition of Done', async () => {
    const repo = await repositoryWithCommit();
    await writeFile(path.join(repo, 'go.mod'), 'module example.com/x\n\ngo 1.99\n');
    const result = await runCliCaptured(['doctor'], { cwd: repo, env: environment() });
    expect(result.stdout).toMatch(/^Toolchain\s+FAIL\s+go\.mod asks for Go 1\.99/m);
    expect(result.stdout).toMatch(/sandbox\.toolchains/);
    expect(result.stdout).toMatch(
      /^Definition of Done\s+ok\s+go test: go test \.\/\.\.\. \(detected: go\.mod\)/m,
    );
    expect(result.exitCode).toBe(4);
    await writeFile(path.join(repo, 'agent-runner.yaml'), 'sandbox:\n  toolchains:\n    go: "1.23"\n');
    const fixed = await runCliCaptured(['doctor'], { cwd: repo, env: environment() });
    expect(fixed.stdout).toMatch(/^Toolchain\s+ok\s+Go 1\.23/m);
  });

  it('fails the configuration check when sandbox.dockerfile names no file (run would refuse it too)', async () => {
    const repo = await repositoryWithCommit();
    await writeFile(
      path.join(repo, 'agent-runner.yaml'),
      'sandbox:\n  dockerfile: docker/Missing.Dockerfile\n',
    );
    const result = await runCliCaptured(['doctor'], { cwd: repo, env: environment() });
    expect(result.stdout).toMatch(
      /^Configuration\s+FAIL\s+sandbox\.dockerfile: .*Missing\.Dockerfile does not exist/m,
    );
    expect(result.stdout).not.toMatch(/All checks passed/);
    expect(result.exitCode).toBe(4);
  });

  it('fails the endpoint checks when the key is missing and the URL refuses connections', async () => {
    const repo = await repositoryWithCommit();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await runCliCaptured(['doctor'], {
      cwd: repo,
      env: environment({ OPENAI_API_KEY: '', OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` }),
    });
    expect(result.stdout).toMatch(
      /^Meta endpoint\s+FAIL\s+.*unreachable: ECONNREFUSED.*OPENAI_API_KEY is not set/m,
    );
    expect(result.stdout).toMatch(/fix: export OPENAI_API_KEY=<your key>/);
    expect(result.exitCode).toBe(4);
  });
});
