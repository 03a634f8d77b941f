import { describe, expect, it } from 'vitest';
import type { ExecResult, WorkerEvent } from '../../src/core/ports.js';
import {
  COMMAND_OUTPUT_TAIL_CHARS,
  CodexEventParser,
  parseCodexJsonl,
  toWorkerRunResult,
} from '../../src/worker/codex-events.js';

const lines = (...events: unknown[]) => events.map((event) => JSON.stringify(event)).join('\n');

const exec = (overrides: Partial<ExecResult> = {}): ExecResult => ({
  exitCode: 0,
  signal: null,
  timedOut: false,
  interrupted: false,
  oomKilled: false,
  durationMs: 1234,
  stdoutTail: '',
  stderrTail: '',
  ...overrides,
});

// The stream seen from codex 0.169.0 (see the codex-cli reference).
const successfulRun = lines(
  { type: 'thread.started', thread_id: '01a1ff7d-aaaa' },
  { type: 'turn.started' },
  {
    type: 'item.completed',
    item: { id: 'item_0', type: 'error', message: 'Model metadata for `m` not found, using fallback' },
  },
  {
    type: 'item.started',
    item: {
      id: 'item_1',
      type: 'command_execution',
      command: "/bin/bash -lc 'echo hello > hello.txt'",
      aggregated_output: '',
      exit_code: null,
      status: 'in_progress',
    },
  },
  {
    type: 'item.completed',
    item: {
      id: 'item_1',
      type: 'command_execution',
      command: "/bin/bash -lc 'echo hello > hello.txt'",
      aggregated_output: 'hello\n',
      exit_code: 0,
      status: 'completed',
    },
  },
  {
    type: 'item.completed',
    item: {
      id: 'item_2',
      type: 'command_execution',
      command: 'false',
      aggregated_output: '',
      exit_code: 1,
      status: 'failed',
    },
  },
  { type: 'item.completed', item: { id: 'item_3', type: 'reasoning', text: 'thinking' } },
  {
    type: 'item.completed',
    item: {
      id: 'item_4',
      type: 'file_change',
      changes: [
        { path: 'a.txt', kind: 'add' },
        { path: 'b.txt', kind: 'update' },
        { path: 'c.txt', kind: 'delete' },
      ],
    },
  },
  { type: 'item.started', item: { id: 'item_5', type: 'todo_list', items: [] } },
  { type: 'item.updated', item: { id: 'item_5', type: 'todo_list', items: [] } },
  { type: 'item.completed', item: { id: 'item_6', type: 'agent_message', text: 'Working on it' } },
  { type: 'item.completed', item: { id: 'item_7', type: 'agent_message', text: 'Done: created hello.txt' } },
  {
    type: 'turn.completed',
    usage: {
      input_tokens: 300,
      cached_input_tokens: 40,
      cache_write_input_tokens: 0,
      output_tokens: 30,
      reasoning_output_tokens: 7,
    },
  },
);

describe('CodexEventParser', () => {
  it('reads every event kind of a successful run', () => {
    const summary = parseCodexJsonl(successfulRun);
    expect(summary.threadId).toBe('01a1ff7d-aaaa');
    expect(summary.commands).toEqual([
      {
        command: "/bin/bash -lc 'echo hello > hello.txt'",
        exitCode: 0,
        status: 'completed',
        outputTail: 'hello\n',
      },
      { command: 'false', exitCode: 1, status: 'failed', outputTail: '' },
    ]);
    expect(summary.fileChanges).toEqual([
      { path: 'a.txt', kind: 'add' },
      { path: 'b.txt', kind: 'update' },
      { path: 'c.txt', kind: 'delete' },
    ]);
    expect(summary.agentMessages).toEqual(['Working on it', 'Done: created hello.txt']);
    expect(summary.usage).toEqual({
      inputTokens: 300,
      cachedInputTokens: 40,
      outputTokens: 30,
      reasoningTokens: 7,
    });
    expect(summary.turnFailures).toEqual([]);
    expect(summary.notices).toEqual(['Model metadata for `m` not found, using fallback']);
    expect(summary.unparsedLines).toBe(0);

    const result = toWorkerRunResult(summary, exec(), { timeoutMs: 60_000 });
    expect(result.failed).toBe(false);
    expect(result.errors).toEqual([]);
    expect(result.finalMessage).toBe('Done: created hello.txt');
    expect(result.durationMs).toBe(1234);
  });

  it('emits live events in stream order', () => {
    const events: WorkerEvent[] = [];
    parseCodexJsonl(successfulRun, (event) => events.push(event));
    expect(events).toEqual([
      { kind: 'thread_started', threadId: '01a1ff7d-aaaa' },
      { kind: 'error', message: 'Model metadata for `m` not found, using fallback', fatal: false },
      { kind: 'command_started', command: "/bin/bash -lc 'echo hello > hello.txt'" },
      {
        kind: 'command_finished',
        command: "/bin/bash -lc 'echo hello > hello.txt'",
        exitCode: 0,
        status: 'completed',
      },
      { kind: 'command_started', command: 'false' },
      { kind: 'command_finished', command: 'false', exitCode: 1, status: 'failed' },
      { kind: 'file_changed', path: 'a.txt', change: 'add' },
      { kind: 'file_changed', path: 'b.txt', change: 'update' },
      { kind: 'file_changed', path: 'c.txt', change: 'delete' },
      { kind: 'message', text: 'Working on it' },
      { kind: 'message', text: 'Done: created hello.txt' },
    ]);
  });

  it('keeps a bare error event as a non-fatal notice', () => {
    const summary = parseCodexJsonl(
      lines(
        { type: 'thread.started', thread_id: 't' },
        { type: 'error', message: 'Reconnecting... 2/5' },
        { type: 'item.completed', item: { id: 'item_1', type: 'agent_message', text: 'ok' } },
        { type: 'turn.completed', usage: { input_tokens: 1, output_tokens: 1 } },
      ),
    );
    expect(summary.notices).toEqual(['Reconnecting... 2/5']);
    const result = toWorkerRunResult(summary, exec(), { timeoutMs: 1000 });
    expect(result.failed).toBe(false);
    expect(result.errors).toEqual([]);
    expect(result.notices).toEqual(['Reconnecting... 2/5']);
  });

  it('treats turn.failed as fatal, with its message', () => {
    const events: WorkerEvent[] = [];
    const summary = parseCodexJsonl(
      lines(
        { type: 'thread.started', thread_id: 't' },
        { type: 'turn.started' },
        { type: 'error', message: 'unexpected status 500: boom' },
        { type: 'turn.failed', error: { message: 'unexpected status 500: boom' } },
      ),
      (event) => events.push(event),
    );
    expect(events.at(-1)).toEqual({ kind: 'error', message: 'unexpected status 500: boom', fatal: true });
    const result = toWorkerRunResult(summary, exec({ exitCode: 1 }), { timeoutMs: 1000 });
    expect(result.failed).toBe(true);
    expect(result.errors).toEqual(['unexpected status 500: boom']);
  });

  it('a CLI that said nothing before it exited non-zero is told apart, with the flags and version to check', () => {
    const silent = parseCodexJsonl('');
    const result = toWorkerRunResult(
      silent,
      exec({ exitCode: 2, stderrTail: "error: unknown option '--bad'\n" }),
      {
        timeoutMs: 1000,
        worker: 'gemini',
      },
    );
    expect(result.errors).toEqual([
      "gemini exited with code 2 before its first event: error: unknown option '--bad'. Check the flags in " +
        "workers.gemini.extraArgs and the CLI's version (workers.gemini.version); `agent-runner doctor` runs it in the image.",
    ]);
    // Once it said something, a non-zero exit is an ordinary failure.
    const spoke = parseCodexJsonl(lines({ type: 'thread.started', thread_id: 't' }));
    expect(toWorkerRunResult(spoke, exec({ exitCode: 2 }), { timeoutMs: 1000 }).errors).toEqual([
      'codex exited with code 2.',
    ]);
  });

  it('counts garbage, unknown events and unknown items without failing', () => {
    const summary = parseCodexJsonl(
      [
        'not json at all',
        '{"type":"thread.started","thread_id":"t"}',
        '',
        '[1,2,3]',
        '{"type":"something.new","x":1}',
        '{"type":"item.completed","item":{"id":"i","type":"hologram"}}',
        '{"type":"item.completed"}',
        '{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":2}}',
        '{"truncated":',
      ].join('\n'),
    );
    expect(summary.unparsedLines).toBe(6);
    expect(summary.threadId).toBe('t');
    expect(summary.usage.inputTokens).toBe(5);
    expect(toWorkerRunResult(summary, exec(), { timeoutMs: 1000 }).failed).toBe(false);
  });

  it('bounds the output tail of a command', () => {
    const big = 'x'.repeat(COMMAND_OUTPUT_TAIL_CHARS * 3) + 'END';
    const summary = parseCodexJsonl(
      lines({
        type: 'item.completed',
        item: {
          id: 'item_1',
          type: 'command_execution',
          command: 'yes',
          aggregated_output: big,
          exit_code: 0,
          status: 'completed',
        },
      }),
    );
    expect(summary.commands[0]?.outputTail.length).toBe(COMMAND_OUTPUT_TAIL_CHARS);
    expect(summary.commands[0]?.outputTail.endsWith('END')).toBe(true);
  });

  it('sums usage over several turns and keeps a listener error from stopping the parse', () => {
    const parser = new CodexEventParser(() => {
      throw new Error('listener bug');
    });
    parser.push(JSON.stringify({ type: 'thread.started', thread_id: 't' }));
    parser.push(
      JSON.stringify({ type: 'turn.completed', usage: { input_tokens: 10, output_tokens: 1 } }) + '\n',
    );
    parser.push(
      JSON.stringify({
        type: 'turn.completed',
        usage: { input_tokens: 20, cached_input_tokens: 5, output_tokens: 2 },
      }),
    );
    expect(parser.summary().usage).toEqual({
      inputTokens: 30,
      cachedInputTokens: 5,
      outputTokens: 3,
      reasoningTokens: 0,
    });
    expect(parser.summary().turnsCompleted).toBe(2);
  });
});

describe('toWorkerRunResult', () => {
  it('reports a timeout with the last notice, so an unreachable endpoint is diagnosable', () => {
    const summary = parseCodexJsonl(lines({ type: 'error', message: 'Reconnecting... waiting for network' }));
    const result = toWorkerRunResult(summary, exec({ exitCode: 124, timedOut: true }), { timeoutMs: 5000 });
    expect(result.failed).toBe(true);
    expect(result.timedOut).toBe(true);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toContain('did not finish within 5s');
    expect(result.errors[0]).toContain('Reconnecting... waiting for network');
  });

  it('reports a non-zero exit without turn.failed with the stderr tail', () => {
    const result = toWorkerRunResult(
      parseCodexJsonl(''),
      exec({ exitCode: 1, stderrTail: 'Error finding codex home\n' }),
      {
        timeoutMs: 1000,
      },
    );
    expect(result.failed).toBe(true);
    expect(result.errors).toEqual([
      expect.stringMatching(
        /^codex exited with code 1 before its first event: Error finding codex home\. Check/,
      ),
    ]);
  });

  it('reports interruption and OOM', () => {
    const summary = parseCodexJsonl('');
    expect(
      toWorkerRunResult(summary, exec({ exitCode: 130, interrupted: true }), { timeoutMs: 1 }).errors[0],
    ).toContain('interrupted');
    expect(
      toWorkerRunResult(summary, exec({ exitCode: 137, oomKilled: true }), { timeoutMs: 1 }).errors[0],
    ).toContain('memory');
  });

  it('prefers the -o file over the last agent message, when it is not empty', () => {
    const summary = parseCodexJsonl(
      lines({ type: 'item.completed', item: { id: 'i', type: 'agent_message', text: 'stream' } }),
    );
    expect(toWorkerRunResult(summary, exec(), { timeoutMs: 1, lastMessage: 'file' }).finalMessage).toBe(
      'file',
    );
    expect(toWorkerRunResult(summary, exec(), { timeoutMs: 1, lastMessage: '' }).finalMessage).toBe('stream');
    expect(
      toWorkerRunResult(parseCodexJsonl(''), exec(), { timeoutMs: 1, lastMessage: null }).finalMessage,
    ).toBeNull();
  });
});
