/**
 * Claude Code's and Gemini CLI's stream parsers against the binaries' own output (recorded from
 * `claude -p --output-format stream-json --verbose` 2.1.330 and `gemini --output-format stream-json` 0.61.0
 * against scripted servers), their argv and environment, the Anthropic and Gemini usage meters and the
 * gateway's route matching for each.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WorkerEvent } from '../../src/core/ports.js';
import { providerFailure } from '../../src/gateway/gateway-guards.js';
import { matchRoute, WORKER_ROUTES } from '../../src/gateway/request-policy.js';
import { AnthropicUsageMeter, askChatUsage, usageMeter } from '../../src/gateway/sse-usage.js';
import { buildClaudeArgv, claudeEnv } from '../../src/worker/claude-adapter.js';
import {
  ClaudeEventParser,
  exitCodeFromText,
  parseClaudeJsonl,
  QWEN_STREAM,
} from '../../src/worker/claude-events.js';
import { buildQwenArgv, qwenEnv } from '../../src/worker/qwen-adapter.js';
import { buildOpenCodeArgv, openCodeEnv } from '../../src/worker/opencode-adapter.js';
import { OpenCodeEventParser } from '../../src/worker/opencode-events.js';
import { buildGeminiArgv, geminiEnv } from '../../src/worker/gemini-adapter.js';
import { parseGeminiJsonl } from '../../src/worker/gemini-events.js';
import { WORKER_KINDS } from '../../src/worker/worker-kinds.js';

const fixture = (name: string) =>
  readFileSync(path.join(import.meta.dirname, '../fixtures/claude', name), 'utf8');

describe('the claude stream parser (real output)', () => {
  it('reads the session, each Bash command with its exit code, the final text and the usage', () => {
    const events: WorkerEvent[] = [];
    const parser = parseClaudeJsonl(fixture('stream-run.jsonl'), (event) => events.push(event));
    const summary = parser.summary();
    expect(summary.threadId).toBe('11111111-2222-3333-4444-555555555555');
    expect(summary.commands.map((command) => [command.command, command.exitCode, command.status])).toEqual([
      ['echo hi > hello.txt && false', 1, 'failed'],
      ['ls && git add -A && git -c user.email=a@b -c user.name=a commit -qm hello', 0, 'completed'],
    ]);
    expect(summary.commands[1]?.outputTail).toBe('hello.txt');
    expect(parser.finalText()).toBe('All done.');
    expect(summary.agentMessages).toEqual(['All done.']);
    expect(summary.usage).toEqual({
      inputTokens: 306,
      cachedInputTokens: 0,
      outputTokens: 60,
      reasoningTokens: 0,
    });
    expect(summary.turnFailures).toEqual([]);
    expect(summary.unparsedLines).toBe(0);
    expect(events[0]).toEqual({ kind: 'thread_started', threadId: '11111111-2222-3333-4444-555555555555' });
    expect(events).toContainEqual({
      kind: 'command_finished',
      command: 'echo hi > hello.txt && false',
      exitCode: 1,
      status: 'failed',
    });
  });

  it('a refused key: the retries are notices, the result is the failure with its HTTP status', () => {
    const summary = parseClaudeJsonl(fixture('stream-auth-refused.jsonl')).summary();
    expect(summary.notices.length).toBeGreaterThan(0);
    expect(summary.notices[0]).toMatch(/^claude retries a model request \(HTTP 401\)/);
    expect(summary.turnFailures).toEqual([
      expect.stringMatching(/^claude ended with an error \(HTTP 401\): Invalid API key/),
    ]);
  });

  it('keeps malformed lines and unknown events out, counted, never fatal', () => {
    const parser = parseClaudeJsonl(
      ['not json', '{"type":"stream_event","event":{}}', '{"type":"system","subtype":"init"}', '[]'].join(
        '\n',
      ),
    );
    expect(parser.summary().unparsedLines).toBe(4);
    expect(parser.summary().commands).toEqual([]);
  });

  it('an error result without a number is an unknown exit code, not a success', () => {
    const lines = [
      {
        type: 'assistant',
        message: { content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'sleep 999' } }] },
      },
      {
        type: 'user',
        message: {
          content: [{ type: 'tool_result', tool_use_id: 't1', is_error: true, content: 'Command timed out' }],
        },
      },
    ];
    const summary = parseClaudeJsonl(lines.map((line) => JSON.stringify(line)).join('\n')).summary();
    expect(summary.commands).toEqual([
      { command: 'sleep 999', exitCode: null, status: 'failed', outputTail: 'Command timed out' },
    ]);
    expect(exitCodeFromText('Error: Exit code 137\nKilled')).toBe(137);
    expect(exitCodeFromText('no exit code here')).toBeNull();
  });

  it('a tool result for a command it never saw is not trusted as one', () => {
    const line = {
      type: 'user',
      message: { content: [{ type: 'tool_result', tool_use_id: 'ghost', is_error: false, content: 'x' }] },
    };
    expect(parseClaudeJsonl(JSON.stringify(line)).summary().commands).toEqual([]);
  });
});

describe('the claude command line and environment', () => {
  it('exec chooses the session id, resume continues it; the prompt is one argument after --', () => {
    expect(
      buildClaudeArgv({ mode: 'exec', prompt: '-rf', sessionId: 'S', model: 'm', extraArgs: ['--x'] }),
    ).toEqual([
      'claude',
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--dangerously-skip-permissions',
      '--model',
      'm',
      '--session-id',
      'S',
      '--x',
      '--',
      '-rf',
    ]);
    expect(buildClaudeArgv({ mode: 'resume', prompt: 'go on', sessionId: 'S', model: 'm' })).toContain(
      '--resume',
    );
    expect(() => buildClaudeArgv({ mode: 'exec', prompt: '  ', sessionId: 'S', model: 'm' })).toThrow(
      /empty/,
    );
  });

  it('talks to the gateway only, with one model, no outside traffic and few retries', () => {
    const env = claudeEnv({
      model: 'm',
      baseUrl: 'http://127.0.0.1:8787/claude',
      apiKey: 'token',
      home: '/h/claude',
    });
    expect(env).toMatchObject({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:8787/claude',
      ANTHROPIC_API_KEY: 'token',
      ANTHROPIC_MODEL: 'm',
      ANTHROPIC_SMALL_FAST_MODEL: 'm',
      CLAUDE_CONFIG_DIR: '/h/claude',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      CLAUDE_CODE_MAX_RETRIES: '2',
    });
  });
});

describe('the gateway for claude', () => {
  it('meters an Anthropic stream: input + cache creation + cache reads, the last output count', () => {
    const meter = new AnthropicUsageMeter();
    const sse = [
      'event: message_start',
      'data: {"type":"message_start","message":{"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":20,"output_tokens":1}}}',
      '',
      'event: content_block_delta',
      'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"usage"}}',
      '',
      'event: message_delta',
      'data: {"type":"message_delta","delta":{},"usage":{"output_tokens":7}}',
      '',
      'event: message_delta',
      'data: {"type":"message_delta","delta":{},"usage":{"output_tokens":9}}',
      '',
    ].join('\n');
    // Split mid-line: the meter reads whole lines whatever the chunks.
    meter.push(sse.slice(0, 50));
    meter.push(sse.slice(50));
    expect(meter.end()).toEqual({
      inputTokens: 35,
      cachedInputTokens: 20,
      outputTokens: 9,
      reasoningTokens: 0,
    });
    expect(usageMeter('anthropic').end()).toBeNull();
  });

  it("allows claude's one route with its query string exactly, nothing else", () => {
    const routes = WORKER_ROUTES.claude ?? [];
    expect(matchRoute('POST', '/claude/v1/messages?beta=true', '/claude', routes)).toEqual({
      allowed: { method: 'POST', path: '/v1/messages?beta=true' },
    });
    for (const target of [
      '/claude/v1/messages',
      '/claude/v1/messages?beta=true&x=1',
      '/claude/v1/messages?beta=false',
      '/claude/v1/messages/count_tokens?beta=true',
      '/v1/messages?beta=true',
    ])
      expect(matchRoute('POST', target, '/claude', routes)).toMatchObject({ refused: 'route' });
    expect(matchRoute('GET', '/claude/v1/messages?beta=true', '/claude', routes)).toMatchObject({
      refused: 'route',
    });
    expect(matchRoute('POST', '/claude/v1/messages?beta=%74rue', '/claude', routes)).toMatchObject({
      refused: 'path',
    });
  });

  it('a provider error names the worker and the fix; other statuses are not a provider failure', () => {
    const answer = {
      worker: 'claude',
      upstream: 'https://api.anthropic.com',
      apiKeyEnv: 'ANTHROPIC_API_KEY',
      model: 'm',
      detail: '{"error":"invalid x-api-key"}',
    };
    expect(providerFailure({ ...answer, status: 401 })?.message).toMatch(
      /^The claude worker's model at https:\/\/api\.anthropic\.com answered HTTP 401; it refused the key: check ANTHROPIC_API_KEY/,
    );
    expect(providerFailure({ ...answer, status: 401 })?.exitCode).toBe(5);
    expect(providerFailure({ ...answer, status: 404 })?.message).toMatch(
      /check workers\.claude\.model \(m\)/,
    );
    expect(providerFailure({ ...answer, status: 429 })?.message).toMatch(/rate-limited or out of quota/);
    expect(providerFailure({ ...answer, status: 503 })?.message).toMatch(/try again later/);
    expect(providerFailure({ ...answer, status: 200 })).toBeNull();
    expect(providerFailure({ ...answer, status: 400 })).toBeNull();
  });
});

describe('the gemini stream parser (real output) and metering', () => {
  it('reads the session, each shell command (exit code unknown unless stated), the answer and the usage', () => {
    const summary = parseGeminiJsonl(fixture('../gemini/stream-run.jsonl'));
    expect(summary.threadId).toBe('11111111-2222-3333-4444-555555555555');
    expect(summary.commands.map((command) => [command.command, command.exitCode, command.status])).toEqual([
      ['echo hi > hello.txt && ls nope', null, 'unknown'],
      ['git add -A && git -c user.email=a@b -c user.name=a commit -qm gem', null, 'unknown'],
    ]);
    expect(summary.commands[0]?.outputTail).toContain("ls: cannot access 'nope'");
    expect(summary.agentMessages).toEqual(['All done.']);
    expect(summary.usage).toMatchObject({ inputTokens: 306, outputTokens: 30 });
    expect(summary.turnFailures).toEqual([]);
    expect(summary.unparsedLines).toBe(0);
  });

  it('a refused key is the run failure; a stated exit code is read', () => {
    const failed = parseGeminiJsonl(fixture('../gemini/stream-auth-refused.jsonl'));
    expect(failed.turnFailures).toEqual([
      expect.stringMatching(/^gemini ended with an error: \[API Error: .*invalid x-api-key/),
    ]);
    const stated = parseGeminiJsonl(
      [
        { type: 'tool_use', tool_name: 'run_shell_command', tool_id: 't', parameters: { command: 'false' } },
        { type: 'tool_result', tool_id: 't', status: 'success', output: 'Output: (empty)\nExit Code: 1' },
      ]
        .map((line) => JSON.stringify(line))
        .join('\n'),
    );
    expect(stated.commands).toMatchObject([{ command: 'false', exitCode: 1, status: 'failed' }]);
  });

  it('meters a Gemini stream: the last usageMetadata, thoughts as output and reasoning', () => {
    const meter = usageMeter('gemini');
    meter.push('data: {"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":3}}\r\n\r\n');
    meter.push(
      'data: {"usageMetadata":{"promptTokenCount":50,"cachedContentTokenCount":10,"candidatesTokenCount":9,"thoughtsTokenCount":4}}\r\n\r\n',
    );
    expect(meter.end()).toEqual({
      inputTokens: 50,
      cachedInputTokens: 10,
      outputTokens: 13,
      reasoningTokens: 4,
    });
  });

  it("gemini's route is its model pin: only the configured model's streaming route", () => {
    const routes = WORKER_KINDS.gemini.routes(['gemini-x'], 'gemini');
    expect(
      matchRoute('POST', '/gemini/v1beta/models/gemini-x:streamGenerateContent?alt=sse', '/gemini', routes),
    ).toMatchObject({ allowed: {} });
    expect(
      matchRoute('POST', '/gemini/v1beta/models/gemini-y:streamGenerateContent?alt=sse', '/gemini', routes),
    ).toMatchObject({ refused: 'route' });
    expect(
      matchRoute('POST', '/gemini/v1beta/models/gemini-x:generateContent', '/gemini', routes),
    ).toMatchObject({ refused: 'route' });
  });

  it('argv: the prompt is one --prompt= element; env: the gateway, the image settings, its own home', () => {
    expect(buildGeminiArgv({ mode: 'exec', prompt: '-rf\n--model=x', sessionId: 'S', model: 'm' })).toEqual([
      'gemini',
      '--prompt=-rf\n--model=x',
      '--model',
      'm',
      '--output-format',
      'stream-json',
      '--yolo',
      '--skip-trust',
      '--session-id',
      'S',
    ]);
    expect(buildGeminiArgv({ mode: 'resume', prompt: 'go', sessionId: 'S', model: 'm' })).toContain(
      '--resume',
    );
    expect(
      geminiEnv({ model: 'm', baseUrl: 'http://127.0.0.1:8787/gemini', apiKey: 't', home: '/h/gemini' }),
    ).toEqual({
      GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:8787/gemini',
      GEMINI_API_KEY: 't',
      GEMINI_MODEL: 'm',
      GEMINI_CLI_HOME: '/h/gemini',
      GEMINI_CLI_SYSTEM_SETTINGS_PATH: '/etc/agent-runner/gemini-settings.json',
      GEMINI_CLI_NO_RELAUNCH: 'true',
    });
  });
});

describe('the qwen stream (real output: Claude Code’s shape) and command line', () => {
  it('reads run_shell_command calls with the exit code each result states', () => {
    const events: WorkerEvent[] = [];
    const summary = new ClaudeEventParser((event) => events.push(event), QWEN_STREAM);
    for (const line of fixture('../qwen/stream-run.jsonl').split('\n')) summary.push(line);
    const result = summary.summary();
    expect(result.threadId).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.commands.map((command) => [command.command, command.exitCode, command.status])).toEqual([
      ['echo hi > hello.txt && ls nope', 2, 'failed'],
      [
        'git -c safe.directory=* add -A && git -c safe.directory=* -c user.email=a@b -c user.name=a commit -qm qw',
        0,
        'completed',
      ],
    ]);
    expect(result.unparsedLines).toBeGreaterThan(0); // its stream_event lines are kept out, counted
    expect(result.turnFailures).toEqual([]);
  });

  it('argv: --prompt= keeps the prompt one element; the Responses API; env: its own HOME, no statistics', () => {
    expect(buildQwenArgv({ mode: 'exec', prompt: '--yolo=no', sessionId: 'S', model: 'm' })).toEqual([
      'qwen',
      '--prompt=--yolo=no',
      '--auth-type',
      'openai-responses',
      '--model',
      'm',
      '--output-format',
      'stream-json',
      '--yolo',
      '--session-id',
      'S',
    ]);
    expect(
      qwenEnv({ model: 'm', baseUrl: 'http://127.0.0.1:8787/qwen/v1', apiKey: 't', home: '/h/qwen' }),
    ).toMatchObject({
      OPENAI_BASE_URL: 'http://127.0.0.1:8787/qwen/v1',
      OPENAI_API_KEY: 't',
      HOME: '/h/qwen',
      QWEN_USAGE_STATISTICS_ENABLED: 'false',
    });
    // `api: chat`: Chat Completions, on the same base URL and key.
    expect(buildQwenArgv({ mode: 'exec', prompt: 'p', sessionId: 'S', model: 'm', api: 'chat' })).toEqual(
      expect.arrayContaining(['--auth-type', 'openai']),
    );
    expect(
      buildQwenArgv({ mode: 'exec', prompt: 'p', sessionId: 'S', model: 'm', api: 'chat' }),
    ).not.toContain('openai-responses');
  });
});

describe('the opencode stream (real output) and command line', () => {
  it('reads the session, each bash call with its exit code, the answer and the summed usage', () => {
    const parser = new OpenCodeEventParser();
    for (const line of fixture('../opencode/stream-run.jsonl').split('\n')) parser.push(line);
    const summary = parser.summary();
    expect(summary.threadId).toMatch(/^ses_/);
    expect(summary.commands.map((command) => [command.command, command.exitCode, command.status])).toEqual([
      ['echo hi > hello.txt && ls nope', 2, 'failed'],
      [
        'git -c safe.directory=* add -A && git -c safe.directory=* -c user.email=a@b -c user.name=a commit -qm oc',
        0,
        'completed',
      ],
    ]);
    expect(parser.finalText()).toBe('All done.');
    expect(summary.usage).toEqual({
      inputTokens: 306,
      cachedInputTokens: 0,
      outputTokens: 30,
      reasoningTokens: 0,
    });
    expect(summary.turnFailures).toEqual([]);
  });

  it('a refused key is the run failure', () => {
    const parser = new OpenCodeEventParser();
    parser.push(fixture('../opencode/stream-auth-refused.jsonl'));
    expect(parser.summary().turnFailures).toEqual(['opencode ended with an error: invalid x-api-key']);
  });

  it('argv: a title (no title call), the prompt after --, the session to resume; env: one pinned model', () => {
    expect(buildOpenCodeArgv({ mode: 'exec', prompt: '-x' })).toEqual([
      'opencode',
      'run',
      '--title',
      'agent-runner',
      '--format',
      'json',
      '--auto',
      '--pure',
      '--',
      '-x',
    ]);
    expect(buildOpenCodeArgv({ mode: 'resume', prompt: 'go', sessionId: 'ses_1' })).toContain('ses_1');
    const env = openCodeEnv({
      model: 'm',
      baseUrl: 'http://127.0.0.1:8787/opencode/v1',
      apiKey: 't',
      home: '/h',
    });
    expect(JSON.parse(env.OPENCODE_CONFIG_CONTENT ?? '{}')).toEqual({
      provider: {
        openai: { options: { baseURL: 'http://127.0.0.1:8787/opencode/v1', apiKey: 't' }, models: { m: {} } },
      },
      model: 'openai/m',
      small_model: 'openai/m',
      autoupdate: false,
      share: 'disabled',
      snapshot: false,
    });
    expect(env).toMatchObject({ OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_DEFAULT_PLUGINS: '1' });
    // `api: chat`: its bundled OpenAI-compatible provider, usage asked for, the same pinned model everywhere.
    const chat = JSON.parse(
      openCodeEnv({ model: 'm', baseUrl: 'http://r/opencode/v1', apiKey: 't', home: '/h', api: 'chat' })
        .OPENCODE_CONFIG_CONTENT ?? '{}',
    ) as Record<string, unknown>;
    expect(chat).toMatchObject({
      provider: {
        'agent-runner': {
          npm: '@ai-sdk/openai-compatible',
          options: { baseURL: 'http://r/opencode/v1', apiKey: 't', includeUsage: true },
          models: { m: {} },
        },
      },
      model: 'agent-runner/m',
      small_model: 'agent-runner/m',
    });
  });
});

describe('metering Chat Completions and answers that are not streams', () => {
  it('reads the usage chunk of a stream; the last running total counts', () => {
    const meter = usageMeter('chat');
    const chunk = (value: Record<string, unknown>) => `data: ${JSON.stringify(value)}\n\n`;
    const stream = [
      chunk({ choices: [{ index: 0, delta: { content: 'hi' } }] }),
      chunk({ choices: [{ index: 0, delta: {} }], usage: { prompt_tokens: 5, completion_tokens: 1 } }),
      chunk({
        choices: [],
        usage: {
          prompt_tokens: 50,
          completion_tokens: 7,
          prompt_tokens_details: { cached_tokens: 30 },
          completion_tokens_details: { reasoning_tokens: 3 },
        },
      }),
      'data: [DONE]\n\n',
    ].join('');
    meter.push(stream.slice(0, 33));
    meter.push(stream.slice(33));
    expect(meter.end()).toEqual({
      inputTokens: 50,
      cachedInputTokens: 30,
      outputTokens: 7,
      reasoningTokens: 3,
    });
    expect(usageMeter('chat').end()).toBeNull();
  });

  it('a `stream: false` answer is metered from its own usage, in every protocol', () => {
    const whole = (protocol: Parameters<typeof usageMeter>[0], body: unknown) => {
      const meter = usageMeter(protocol);
      const text = JSON.stringify(body, null, 2);
      meter.push(text.slice(0, 10));
      meter.push(text.slice(10));
      return meter.end();
    };
    expect(whole('chat', { choices: [], usage: { prompt_tokens: 9, completion_tokens: 4 } })).toMatchObject({
      inputTokens: 9,
      outputTokens: 4,
    });
    expect(whole('responses', { output: [], usage: { input_tokens: 8, output_tokens: 3 } })).toMatchObject({
      inputTokens: 8,
      outputTokens: 3,
    });
    expect(whole('anthropic', { content: [], usage: { input_tokens: 7, output_tokens: 2 } })).toMatchObject({
      inputTokens: 7,
      outputTokens: 2,
    });
    expect(
      whole('gemini', { candidates: [], usageMetadata: { promptTokenCount: 6, candidatesTokenCount: 1 } }),
    ).toMatchObject({ inputTokens: 6, outputTokens: 1 });
    expect(whole('chat', { error: { message: 'no' } })).toBeNull();
    expect(whole('chat', [1, 2])).toBeNull();
  });

  it('the gateway asks a streamed chat request for its usage, whatever the worker sent', () => {
    const asked = (body: unknown) =>
      JSON.parse(askChatUsage(Buffer.from(JSON.stringify(body))).toString('utf8'));
    expect(asked({ model: 'm', messages: [], stream: true })).toEqual({
      model: 'm',
      messages: [],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(asked({ model: 'm', stream: true, stream_options: { include_usage: false, x: 1 } })).toEqual({
      model: 'm',
      stream: true,
      stream_options: { include_usage: true, x: 1 },
    });
    // Not a stream, or not JSON: unchanged (its answer carries its usage, or it is refused upstream).
    expect(asked({ model: 'm', stream: false })).toEqual({ model: 'm', stream: false });
    expect(askChatUsage(Buffer.from('not json')).toString('utf8')).toBe('not json');
  });
});
