/** Which workers a config offers, each field resolved, and the image that holds them. */
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { configuredWorkers, imageWorkers } from '../../src/config/workers.js';
import { extraWorkerBuildArgs, workerImageTag } from '../../src/sandbox/worker-image.js';

const config = (values: Record<string, unknown>) => validateConfig([{ source: 'test', values }]);

describe('configured workers', () => {
  it('by default: codex alone, on the Meta-agent endpoint, key and model', () => {
    const [codex, ...others] = configuredWorkers(
      config({ meta: { model: 'gpt-x', baseUrl: 'https://m.example/v1' } }),
    );
    expect(others).toEqual([]);
    expect(codex).toMatchObject({
      type: 'codex',
      model: 'gpt-x',
      baseUrl: 'https://m.example/v1',
      apiKeyEnv: 'OPENAI_API_KEY',
      allowedModels: ['gpt-x'],
    });
  });

  it('a workers.claude block adds claude with Anthropic defaults; worker.* stays the default worker', () => {
    const profiles = configuredWorkers(
      config({ worker: { model: 'gpt-w' }, workers: { claude: { timeout: '5m' } } }),
    );
    expect(profiles.map((profile) => profile.type)).toEqual(['codex', 'claude']);
    expect(profiles[0]).toMatchObject({ model: 'gpt-w' });
    expect(profiles[1]).toMatchObject({
      model: 'claude-sonnet-4-5',
      baseUrl: 'https://api.anthropic.com',
      apiKeyEnv: 'ANTHROPIC_API_KEY',
      version: '2.1.330',
      timeoutMs: 300_000,
      allowedModels: ['claude-sonnet-4-5'],
    });
  });

  it('worker.type: claude alone makes claude the only worker, worker.* its block', () => {
    const profiles = configuredWorkers(
      config({ worker: { type: 'claude', model: 'claude-x', apiKeyEnv: 'MY_KEY' } }),
    );
    expect(profiles).toHaveLength(1);
    expect(profiles[0]).toMatchObject({ type: 'claude', model: 'claude-x', apiKeyEnv: 'MY_KEY' });
  });

  it('refuses an unknown worker type, an unknown block field and a bad version', () => {
    expect(() => config({ worker: { type: 'aider' } })).toThrow(/worker\.type/);
    expect(() => config({ workers: { claude: { colour: 'red' } } })).toThrow(/workers\.claude/);
    expect(() => config({ workers: { claude: { version: '1; rm -rf /' } } })).toThrow(/version/);
    expect(() => config({ workers: { gemini2: {} } })).toThrow(/workers/);
  });

  it('a worker key variable is refused in sandbox.env like the Meta-agent key', () => {
    expect(() =>
      config({
        workers: { claude: { apiKeyEnv: 'CLAUDE_TOKEN_X' } },
        sandbox: { env: { CLAUDE_TOKEN_X: 'v' } },
      }),
    ).toThrow(/secret/);
  });
});

describe('the worker image of a set of workers', () => {
  const inputs = { dockerfile: 'FROM x', codexVersion: '0.169.0', baseImage: 'b', extraCa: '' };

  it('codex alone keeps its tag; each extra worker is in the tag, the hash and the build arguments', () => {
    expect(workerImageTag(inputs)).toMatch(/^agent-runner-worker:codex-0\.169\.0-[0-9a-f]{12}$/);
    const withClaude = workerImageTag({ ...inputs, extraWorkers: ['claude@2.1.330'] });
    expect(withClaude).toMatch(/^agent-runner-worker:codex-0\.169\.0-claude-2\.1\.330-[0-9a-f]{12}$/);
    expect(workerImageTag({ ...inputs, extraWorkers: ['claude@2.1.331'] })).not.toBe(withClaude);
    expect(extraWorkerBuildArgs(['claude@2.1.330'])).toEqual({ CLAUDE_VERSION: '2.1.330' });
    expect(imageWorkers(config({ workers: { claude: { version: '2.1.329' } } }))).toEqual({
      codexVersion: '0.169.0',
      extraWorkers: ['claude@2.1.329'],
    });
  });

  it('the statx shim the Dockerfile compiles is part of the tag', () => {
    const withShim = workerImageTag({ ...inputs, statxShim: 'int statx(void);' });
    expect(withShim).not.toBe(workerImageTag(inputs));
    expect(workerImageTag({ ...inputs, statxShim: 'int statx(int);' })).not.toBe(withShim);
  });
});

describe('the OpenAI API a worker speaks', () => {
  it('qwen and opencode speak the Responses API unless `api: chat`; the route follows', () => {
    const profiles = configuredWorkers(config({ workers: { qwen: { api: 'chat' }, opencode: {} } }));
    const byType = Object.fromEntries(profiles.map((profile) => [profile.type, profile]));
    expect(byType.codex?.protocol).toBe('responses');
    expect(byType.qwen?.protocol).toBe('chat');
    expect(byType.opencode?.protocol).toBe('responses');
    const qwen = byType.qwen;
    expect(qwen?.kind.routes(qwen.allowedModels, qwen.protocol)).toEqual([
      { method: 'POST', path: '/chat/completions' },
    ]);
    const opencode = byType.opencode;
    expect(opencode?.kind.routes(opencode.allowedModels, opencode.protocol)).toEqual([
      { method: 'POST', path: '/responses' },
    ]);
  });

  it('refuses `api` on a worker that speaks one protocol, and an unknown API', () => {
    expect(() => config({ workers: { codex: { api: 'chat' } } })).toThrow(
      /workers\.codex\.api.*codex speaks only responses/s,
    );
    expect(() => config({ workers: { claude: { api: 'responses' } } })).toThrow(/workers\.claude\.api/);
    expect(() => config({ workers: { qwen: { api: 'completions' } } })).toThrow(/workers\.qwen\.api/);
  });
});
