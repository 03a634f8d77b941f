/** The server's journal follower: complete lines only, from a line on, live until the task ends. */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { getEventListeners } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FOLLOW_POLL_MS, journalLines } from '../../src/serve/journal-follow.js';

let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function journal(text: string): string {
  dir = mkdtempSync(path.join(tmpdir(), 'journal-follow-'));
  const file = path.join(dir, 'events.jsonl');
  writeFileSync(file, text);
  return file;
}

async function collect(lines: AsyncGenerator<{ id: number; text: string }>): Promise<[number, string][]> {
  const seen: [number, string][] = [];
  for await (const line of lines) seen.push([line.id, line.text]);
  return seen;
}

describe('following a journal', () => {
  it('gives complete lines with their line numbers, after a given line; a line being written waits', async () => {
    const file = journal('{"a":1}\n{"b":2}\n{"c":3}\n{"partial":');
    const signal = new AbortController().signal;
    expect(await collect(journalLines(file, { afterLine: 0, follow: false, signal }))).toEqual([
      [1, '{"a":1}'],
      [2, '{"b":2}'],
      [3, '{"c":3}'],
    ]);
    expect(await collect(journalLines(file, { afterLine: 2, follow: false, signal }))).toEqual([
      [3, '{"c":3}'],
    ]);
  });

  it('follows new lines until the task has ended, then reads what was written last', async () => {
    const file = journal('{"a":1}\n');
    let ended = false;
    const seen = collect(
      journalLines(file, {
        afterLine: 0,
        follow: true,
        signal: new AbortController().signal,
        ended: () => ended,
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 5 * FOLLOW_POLL_MS));
    appendFileSync(file, '{"b":2}\n');
    await new Promise((resolve) => setTimeout(resolve, 5 * FOLLOW_POLL_MS));
    appendFileSync(file, '{"c":3}\n');
    ended = true;
    expect((await seen).map(([id]) => id)).toEqual([1, 2, 3]);
  });

  it('holds no more than one abort listener however long it waits (a page may watch for hours)', async () => {
    const file = journal('{"a":1}\n');
    const stop = new AbortController();
    const seen = collect(
      journalLines(file, { afterLine: 0, follow: true, signal: stop.signal, ended: () => false }),
    );
    await new Promise((resolve) => setTimeout(resolve, 40 * FOLLOW_POLL_MS));
    expect(getEventListeners(stop.signal, 'abort').length).toBeLessThanOrEqual(1);
    stop.abort();
    expect(await seen).toEqual([[1, '{"a":1}']]);
  });
});
