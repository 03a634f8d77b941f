import { describe, expect, it } from 'vitest';
import { AgentRunnerError } from '../../src/errors.js';
import { buildCodexArgv, codexProviderToml } from '../../src/worker/codex-adapter.js';

const provider = {
  baseUrl: 'http://host.docker.internal:4000/v1',
  envKey: 'AGENT_RUNNER_WORKER_KEY',
  requestMaxRetries: 0,
  streamMaxRetries: 1,
  streamIdleTimeoutMs: 60_000,
};

describe('buildCodexArgv', () => {
  it('builds a headless exec with our provider and the prompt as one element', () => {
    const prompt = 'Create hello.txt; then run `ls -la` && echo "$HOME"';
    expect(
      buildCodexArgv({
        mode: 'exec',
        prompt,
        model: 'gpt-5.5',
        provider,
        workdir: '/workspace',
        lastMessagePath: '/codex-home/last.txt',
      }),
    ).toEqual([
      'codex',
      'exec',
      '--json',
      '--dangerously-bypass-approvals-and-sandbox',
      '--skip-git-repo-check',
      '-C',
      '/workspace',
      '-m',
      'gpt-5.5',
      '-c',
      'model_provider=agentrunner',
      '-c',
      'model_providers.agentrunner={name="agentrunner",base_url="http://host.docker.internal:4000/v1",' +
        'env_key="AGENT_RUNNER_WORKER_KEY",wire_api="responses",request_max_retries=0,stream_max_retries=1,' +
        'stream_idle_timeout_ms=60000}',
      '-c',
      'analytics.enabled=false',
      '-c',
      'features.plugins=false',
      '-o',
      '/codex-home/last.txt',
      '--',
      prompt,
    ]);
  });

  it('resumes a thread: same options, then `resume <thread> -- PROMPT`', () => {
    const argv = buildCodexArgv({
      mode: 'resume',
      threadId: '01a1ff7d-1234',
      prompt: '-starts with a dash',
      model: 'm',
      provider,
      workdir: '/workspace',
      configOverrides: ['model_reasoning_effort="low"'],
    });
    expect(argv.slice(0, 3)).toEqual(['codex', 'exec', '--json']);
    expect(argv.slice(-4)).toEqual(['resume', '01a1ff7d-1234', '--', '-starts with a dash']);
    // Extra overrides come after ours so they win.
    const overrideIndex = argv.indexOf('model_reasoning_effort="low"');
    expect(argv[overrideIndex - 1]).toBe('-c');
    expect(overrideIndex).toBeGreaterThan(argv.indexOf('model_provider=agentrunner'));
    expect(argv).not.toContain('-o');
  });

  it('refuses resume without a thread id', () => {
    expect(() =>
      buildCodexArgv({ mode: 'resume', prompt: 'p', model: 'm', provider, workdir: '/workspace' }),
    ).toThrow(AgentRunnerError);
  });

  it.each(['', '  ', '-'])('refuses the prompt %j (codex would read it from the closed stdin)', (prompt) => {
    expect(() => buildCodexArgv({ mode: 'exec', prompt, model: 'm', provider, workdir: '/w' })).toThrow(
      /prompt/,
    );
  });

  it('refuses an env key that is not a variable name', () => {
    expect(() =>
      buildCodexArgv({
        mode: 'exec',
        prompt: 'p',
        model: 'm',
        provider: { ...provider, envKey: 'A B' },
        workdir: '/w',
      }),
    ).toThrow(/apiKeyEnv/);
  });
});

describe('codexProviderToml', () => {
  it('escapes quotes and backslashes as TOML basic strings', () => {
    const toml = codexProviderToml({ baseUrl: 'http://h/v1?a="b"\\', envKey: 'K' });
    expect(toml).toContain('base_url="http://h/v1?a=\\"b\\"\\\\"');
    // Defaults: a few retries, a long idle timeout.
    expect(toml).toContain('request_max_retries=2');
    expect(toml).toContain('stream_idle_timeout_ms=300000');
  });

  it('refuses negative retry counts', () => {
    expect(() => codexProviderToml({ baseUrl: 'http://h/v1', envKey: 'K', requestMaxRetries: -1 })).toThrow(
      /requestMaxRetries/,
    );
  });
});
