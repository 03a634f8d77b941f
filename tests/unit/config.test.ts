import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig, validateConfig } from '../../src/config/load.js';
import { DEFAULT_EXCLUDE } from '../../src/config/schema.js';
import { UserError } from '../../src/errors.js';

async function repoWithConfig(text: string | null): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ar-config-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  if (text !== null) await writeFile(path.join(dir, 'agent-runner.yaml'), text);
  return dir;
}

async function configError(text: string, env: NodeJS.ProcessEnv = {}): Promise<UserError> {
  const repoRoot = await repoWithConfig(text);
  const error = await loadConfig({ repoRoot, env }).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(UserError);
  return error as UserError;
}

describe('config', () => {
  it('has working defaults with no file', async () => {
    const config = await loadConfig({ repoRoot: await repoWithConfig(null), env: {} });
    expect(config.meta.baseUrl).toBe('https://api.openai.com/v1');
    expect(config.meta.apiKeyEnv).toBe('OPENAI_API_KEY');
    expect(config.meta.promptBudgetTokens).toBe(24_000);
    expect(config.worker.timeout).toBe(20 * 60_000);
    expect(config.sandbox.memory).toBe(4 * 1024 ** 3);
    expect(config.scope.exclude).toEqual(DEFAULT_EXCLUDE);
  });

  it('refuses configured paths that name no file, before anything runs (every key at once)', async () => {
    const error = await configError(
      'sandbox:\n  dockerfile: docker/Missing.Dockerfile\n  extraCaCert: certs/none.pem\nnotes:\n  template: tpl\n',
    );
    expect(error.code).toBe('config_invalid');
    expect(error.message).toMatch(
      /^sandbox\.dockerfile: .*docker\/Missing\.Dockerfile does not exist; fix the path/,
    );
    expect(error.message).toMatch(/sandbox\.extraCaCert: .*certs\/none\.pem does not exist/);
    expect(error.message).toMatch(/notes\.template: .*tpl does not exist/);
    expect((await configError('sandbox:\n  dockerfile: ../Dockerfile\n')).message).toMatch(
      /sandbox\.dockerfile: \.\.\/Dockerfile is outside the repository/,
    );
    // A directory is not the file, and a file that is there passes.
    const repoRoot = await repoWithConfig('sandbox:\n  dockerfile: docker\n');
    await mkdir(path.join(repoRoot, 'docker'));
    await expect(loadConfig({ repoRoot, env: {} })).rejects.toThrow(/docker is not a file/);
    await writeFile(path.join(repoRoot, 'docker', 'Dockerfile'), 'FROM scratch\n');
    await writeFile(path.join(repoRoot, 'agent-runner.yaml'), 'sandbox:\n  dockerfile: docker/Dockerfile\n');
    expect((await loadConfig({ repoRoot, env: {} })).sandbox.dockerfile).toBe('docker/Dockerfile');
  });

  it('sandbox.toolchains.node takes a version or a range, and refuses anything else', async () => {
    expect(
      (
        await loadConfig({
          repoRoot: await repoWithConfig('sandbox:\n  toolchains:\n    node: 22\n'),
          env: {},
        })
      ).sandbox.toolchains.node,
    ).toBe('22');
    expect(validateConfig([]).sandbox.toolchains).toEqual({});
    expect((await configError('sandbox:\n  toolchains:\n    node: latest-please\n')).message).toMatch(
      /sandbox\.toolchains\.node: expected a Node version or range like 22 or \^20\.11/,
    );
  });

  it('merges defaults < file < environment < flags', async () => {
    const repoRoot = await repoWithConfig(
      'meta:\n  model: from-file\n  baseUrl: http://file.example/v1\nsandbox:\n  memory: 2g\n',
    );
    const config = await loadConfig({
      repoRoot,
      env: { OPENAI_BASE_URL: 'http://env.example/v1', AGENT_RUNNER_MODEL: 'from-env' },
      flags: { meta: { model: 'from-flag' }, limits: { maxIterations: 3 } },
    });
    expect(config.meta.model).toBe('from-flag');
    expect(config.meta.baseUrl).toBe('http://env.example/v1');
    expect(config.sandbox.memory).toBe(2 * 1024 ** 3);
    expect(config.limits.maxIterations).toBe(3);
  });

  it('parses durations and sizes', () => {
    const config = validateConfig([
      {
        source: 'test',
        values: { worker: { timeout: '90s' }, limits: { wallClock: '2h' }, sandbox: { memory: '512m' } },
      },
    ]);
    expect(config.worker.timeout).toBe(90_000);
    expect(config.limits.wallClock).toBe(7_200_000);
    expect(config.sandbox.memory).toBe(512 * 1024 ** 2);
  });

  it('names the dotted path of a bad size and the file it came from', async () => {
    const error = await configError('sandbox:\n  memory: lots\n');
    expect(error.message).toContain('sandbox.memory: expected a size like 4g');
    expect(error.message).toContain('agent-runner.yaml');
    expect(error.exitCode).toBe(2);
  });

  it('refuses unknown keys, naming them', async () => {
    const error = await configError('sandbox:\n  memroy: 4g\n');
    expect(error.message).toContain('sandbox.memroy: unknown key');
  });

  it('names array indices for wrong types', async () => {
    const error = await configError(
      'dod:\n  checks:\n    - name: test\n      command: npm test\n    - name: lint\n',
    );
    expect(error.message).toContain('dod.checks[1].command: Required');
  });

  it('reports wrong types with the path', async () => {
    const error = await configError('limits:\n  maxIterations: many\n');
    expect(error.message).toMatch(/limits\.maxIterations: .*number/);
  });

  it('gives line and column for invalid YAML', async () => {
    const error = await configError('meta:\n  model: [unclosed\n');
    expect(error.message).toMatch(/agent-runner\.yaml:\d+:\d+: invalid YAML/);
  });

  it('refuses duplicate keys', async () => {
    const error = await configError('meta:\n  model: a\n  model: b\n');
    expect(error.message).toContain('invalid YAML');
  });

  it('says when the bad value came from the environment', async () => {
    const error = await configError('', { AGENT_RUNNER_NETWORK: 'everywhere' });
    expect(error.message).toContain('sandbox.network');
    expect(error.message).toContain('(in environment)');
  });

  it('AGENT_RUNNER_FORGE and AGENT_RUNNER_FORGE_API_URL name a self-hosted forge over the file', async () => {
    const repoRoot = await repoWithConfig('deliver:\n  forge: github\n');
    const config = await loadConfig({
      repoRoot,
      env: { AGENT_RUNNER_FORGE: 'gitlab', AGENT_RUNNER_FORGE_API_URL: 'https://git.example.com' },
    });
    expect(config.deliver).toMatchObject({ forge: 'gitlab', apiUrl: 'https://git.example.com' });
    const error = await configError('', { AGENT_RUNNER_FORGE: 'gitea' });
    expect(error.message).toContain('deliver.forge');
    expect(error.message).toContain('(in environment)');
  });
});
