import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  CassettePlayer,
  CassetteRecorder,
  ReplayDivergenceError,
  firstDifference,
  normalizeForMatch,
  requestSignature,
} from '../../src/gateway/cassette.js';
import { createRedactor } from '../../src/notes/redact.js';

function tempFile(name: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'gw-cassette-unit-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, name);
}

describe('firstDifference', () => {
  it.each([
    [{ a: 1 }, { a: 1 }, null],
    [{ a: [1, 2] }, { a: [1, 3] }, 'a[1]: recorded 2, now 3'],
    [{ a: [1] }, { a: [1, 2] }, 'a[1]: recorded nothing, now 2'],
    [{ a: { b: 'x' } }, { a: {} }, 'a.b: recorded "x", now nothing'],
    ['text', { a: 1 }, '(body): recorded "text", now {"a":1}'],
  ])('%j vs %j', (expected, actual, difference) => {
    expect(firstDifference(expected, actual)).toBe(difference);
  });
});

describe('normalizeForMatch', () => {
  it('drops codex telemetry and masks ids, dates and timings, nothing else', () => {
    expect(
      normalizeForMatch({
        prompt_cache_key: 'abc',
        client_metadata: { turn_id: 'x' },
        input: [
          { id: 'msg_01a1ffa4-28bb-7970-a91e-dae9ca2e96f4', text: '<current_date>2026-11-21</current_date>' },
          { output: 'Chunk ID: 703c33\nWall time: 0.0123 seconds\nProcess exited with code 0' },
          { at: '2026-01-02T03:04:05.678Z', keep: 'Write out.txt.' },
        ],
      }),
    ).toEqual({
      input: [
        { id: 'msg_<uuid>', text: '<current_date>-</current_date>' },
        { output: 'Chunk ID: -\nWall time: - seconds\nProcess exited with code 0' },
        { at: '<time>', keep: 'Write out.txt.' },
      ],
    });
  });
});

describe('CassetteRecorder and CassettePlayer', () => {
  it('records redacted exchanges and replays them in order per kind', async () => {
    const file = tempFile('c.json');
    const redact = createRedactor(['super-secret-key-123'], ['token-\\d{4}']);
    const recorder = new CassetteRecorder(file, redact);
    await recorder.add({
      kind: 'meta',
      index: 0,
      method: 'POST',
      path: '/chat/completions',
      requestText: '{"messages":[{"content":"hi token-1234"}]}',
      response: { status: 200, contentType: 'application/json', body: '{"reply":"super-secret-key-123"}' },
    });
    await recorder.add({
      kind: 'worker',
      index: 0,
      method: 'POST',
      path: '/responses',
      requestText: '{"input":"a"}',
      response: { status: 200, contentType: 'text/event-stream', body: 'data: {}\n\n' },
    });
    const player = await CassettePlayer.load(file);
    expect(player.remaining()).toEqual({ worker: 1, meta: 1 });
    // Worker first although meta was recorded first: order is per kind.
    expect(player.match('worker', 'POST', '/responses', '{"input":"a"}').response.body).toBe('data: {}\n\n');
    const meta = player.match(
      'meta',
      'POST',
      '/chat/completions',
      redact('{"messages":[{"content":"hi token-9999"}]}'),
    );
    expect(meta.response.body).toBe('{"reply":"[REDACTED]"}');
    expect(player.remaining()).toEqual({ worker: 0, meta: 0 });
    expect(() => player.match('worker', 'POST', '/responses', '{"input":"a"}')).toThrow(
      /diverged at worker call #2 \(POST \/responses\): the recording has only 1 worker calls/,
    );
  });

  it('names the call, the kind and what differed', async () => {
    const file = tempFile('c.json');
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        exchanges: [
          {
            kind: 'worker',
            index: 0,
            method: 'POST',
            path: '/responses',
            request: { model: 'm', input: [{ type: 'message', role: 'user', content: 'a' }] },
            response: { status: 200, contentType: 'text/event-stream', body: '' },
          },
        ],
      }),
    );
    const player = await CassettePlayer.load(file);
    let caught: unknown;
    try {
      player.match(
        'worker',
        'POST',
        '/responses',
        '{"model":"m","input":[{"type":"message","role":"user","content":"b"}]}',
      );
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ReplayDivergenceError);
    expect((caught as ReplayDivergenceError).message).toContain(
      'diverged at worker call #1 (POST /responses): userMessages[0]: recorded "a", now "b"',
    );
    expect((caught as ReplayDivergenceError).divergence).toEqual({
      kind: 'worker',
      index: 0,
      difference: 'userMessages[0]: recorded "a", now "b"',
    });
    // A failed match does not advance: the same call can still match.
    const same = '{"model":"m","input":[{"type":"message","role":"user","content":"a"}]}';
    expect(player.match('worker', 'POST', '/responses', same).index).toBe(0);
  });

  it('matches what a request asks, not what it reports (commit ids, timings, command outputs)', () => {
    const worker = (output: string) => ({
      model: 'm',
      instructions: 'be a coder',
      input: [
        { type: 'message', role: 'user', content: 'Add slugify.' },
        { type: 'function_call', call_id: 'c1', name: 'exec_command', arguments: '{"cmd":"npm test"}' },
        { type: 'function_call_output', call_id: 'c1', output },
      ],
    });
    const meta = (facts: string, prd: string) => ({
      model: 'm',
      messages: [
        { role: 'system', content: 'You are the Meta-agent.' },
        { role: 'user', content: prd },
        { role: 'user', content: facts },
      ],
    });
    expect(
      firstDifference(
        normalizeForMatch(requestSignature('worker', worker('duration_ms 51.2'))),
        normalizeForMatch(requestSignature('worker', worker('duration_ms 48.9'))),
      ),
    ).toBeNull();
    expect(
      firstDifference(
        normalizeForMatch(requestSignature('meta', meta('head 1a2b3c4d5e6f', '# PRD'))),
        normalizeForMatch(requestSignature('meta', meta('head 9f8e7d6c5b4a', '# PRD'))),
      ),
    ).toBeNull();
    expect(
      firstDifference(
        normalizeForMatch(requestSignature('meta', meta('head 1a2b3c4d5e6f', '# PRD'))),
        normalizeForMatch(requestSignature('meta', meta('head 1a2b3c4d5e6f', '# Another PRD'))),
      ),
    ).toBe('firstUser: recorded "# PRD", now "# Another PRD"');
  });

  it('refuses a file that is not a cassette, saying how to make one', async () => {
    const file = tempFile('bad.json');
    writeFileSync(file, '{"hello":1}');
    await expect(CassettePlayer.load(file)).rejects.toThrow(/not an agent-runner cassette.*--record/);
    await expect(CassettePlayer.load(`${file}.missing`)).rejects.toThrow(/Cannot read the cassette/);
  });

  it('a resumed task adds its own attempt to the cassette, and its replay answers from that attempt only', async () => {
    const file = tempFile('attempts.json');
    const redact = createRedactor([], []);
    const exchange = (content: string, reply: string) => ({
      kind: 'meta' as const,
      index: 0,
      method: 'POST',
      path: '/chat/completions',
      requestText: JSON.stringify({ messages: [{ role: 'user', content }] }),
      response: { status: 200, contentType: 'application/json', body: reply },
    });
    const first = new CassetteRecorder(file, redact);
    await first.add(exchange('plan it', 'first attempt'));
    const resumed = await CassetteRecorder.continuing(file, redact);
    await resumed.add(exchange('decide', 'second attempt'));
    const again = await CassetteRecorder.continuing(file, redact);
    await again.add(exchange('decide again', 'third attempt'));
    const attempt2 = await CassettePlayer.load(file, 2);
    expect(attempt2.remaining()).toEqual({ meta: 1, worker: 0 });
    const requestText = JSON.stringify({ messages: [{ role: 'user', content: 'decide' }] });
    expect(attempt2.match('meta', 'POST', '/chat/completions', requestText).response.body).toBe(
      'second attempt',
    );
    expect((await CassettePlayer.load(file)).remaining().meta).toBe(1);
    expect((await CassettePlayer.load(file, 3)).remaining().meta).toBe(1);
  });
});
