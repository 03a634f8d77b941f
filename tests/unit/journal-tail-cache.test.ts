/**
 * The server's journal cache: an unchanged journal is not read again, a grown one is read from where the last
 * read stopped (each byte once), and at every length it answers what `readTaskJournal` answers (the fold is
 * carried on after each answer). The reads are counted through the cache's reader, the real file system below.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { StampedEvent } from '../../src/core/events.js';
import { TaskRunner } from '../../src/core/task-runner.js';
import {
  JournalTailCache,
  fileJournalReader,
  type JournalReader,
} from '../../src/lifecycle/journal-tail-cache.js';
import { readTaskJournal } from '../../src/lifecycle/task-journal-state.js';
import { JournalInvalidError } from '../../src/notes/event-journal.js';
import {
  FakeWorker,
  ScriptedMetaAgent,
  SLUGIFY_PLAN,
  assessStep,
  commitSlugify,
  fakeRepo,
  runWorkerStep,
  testRunnerDeps,
  testRunnerOptions,
} from '../support/core-fakes.js';

/** The journal lines of a real task run (two worker runs, one assessment refused, then COMPLETE). */
async function taskLines(): Promise<string[]> {
  const repo = fakeRepo();
  const events: StampedEvent[] = [];
  const runner = new TaskRunner(
    await testRunnerOptions(),
    testRunnerDeps(repo, {
      meta: new ScriptedMetaAgent([
        { kind: 'plan', plan: SLUGIFY_PLAN },
        runWorkerStep(),
        assessStep(false),
        runWorkerStep({ mode: 'resume' }),
        assessStep(true),
      ]),
      worker: new FakeWorker(repo, [commitSlugify(false), commitSlugify(true, 'Fix slugify')]),
      onEvent: (event) => events.push(structuredClone(event)),
    }),
  );
  expect((await runner.run()).state).toBe('COMPLETE');
  return events.map((event) => JSON.stringify(event));
}

function runDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-tail-cache-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The file system's reader, counting reads and bytes read. */
function countingReader(): JournalReader & { reads: number; bytes: number } {
  const counter = {
    reads: 0,
    bytes: 0,
    stat: fileJournalReader.stat,
    read: (file: string, offset: number, length: number) => {
      const chunk = fileJournalReader.read(file, offset, length);
      counter.reads += 1;
      counter.bytes += chunk.length;
      return chunk;
    },
  };
  return counter;
}

describe('the journal tail cache', () => {
  it('answers as readTaskJournal at every length, reading each byte once and nothing for an unchanged journal', async () => {
    const lines = await taskLines();
    expect(lines.length).toBeGreaterThan(10);
    const dir = runDir();
    const file = path.join(dir, 'events.jsonl');
    const reader = countingReader();
    const cache = new JournalTailCache({ reader });
    expect(cache.read(dir, 'T-1')).toBeNull();
    writeFileSync(file, '');
    let written = 0;
    for (const line of lines) {
      appendFileSync(file, `${line}\n`);
      written += Buffer.byteLength(line) + 1;
      expect(cache.read(dir, 'T-1')).toEqual(readTaskJournal(dir, 'T-1'));
    }
    // Every byte read once, however often it was asked.
    expect(reader.bytes).toBe(written);
    const reads = reader.reads;
    const last = cache.read(dir, 'T-1');
    expect(reader.reads).toBe(reads);
    expect(last?.finished?.state).toBe('COMPLETE');
    expect(last?.runs).toHaveLength(2);
    expect(last?.events).toBe(lines.length);
  });

  it('waits for a line without its newline, ignores a torn last line, and reports it as damage once a line follows', async () => {
    const lines = await taskLines();
    const dir = runDir();
    const file = path.join(dir, 'events.jsonl');
    const cache = new JournalTailCache();
    writeFileSync(file, `${lines[0]}\n${lines[1]}`);
    expect(cache.read(dir, 'T-1')?.events).toBe(1);
    appendFileSync(file, '\n{"type": "tor');
    expect(cache.read(dir, 'T-1')).toEqual(readTaskJournal(dir, 'T-1'));
    appendFileSync(file, '\n');
    // A torn line (the runner died mid-append) is ignored as readTaskJournal ignores it.
    expect(cache.read(dir, 'T-1')).toEqual(readTaskJournal(dir, 'T-1'));
    appendFileSync(file, `${lines[2]}\n`);
    expect(() => readTaskJournal(dir, 'T-1')).toThrow(JournalInvalidError);
    const damage = (() => {
      try {
        cache.read(dir, 'T-1');
      } catch (error) {
        return error;
      }
      return null;
    })();
    expect(damage).toBeInstanceOf(JournalInvalidError);
    expect((damage as JournalInvalidError).line).toBe(3);
  });

  it('reads a replaced or shrunk journal anew', async () => {
    const lines = await taskLines();
    const dir = runDir();
    const file = path.join(dir, 'events.jsonl');
    const cache = new JournalTailCache();
    writeFileSync(file, `${lines.join('\n')}\n`);
    expect(cache.read(dir, 'T-1')?.events).toBe(lines.length);
    writeFileSync(file, `${lines.slice(0, 3).join('\n')}\n`);
    expect(cache.read(dir, 'T-1')).toEqual(readTaskJournal(dir, 'T-1'));
    expect(cache.read(dir, 'T-1')?.events).toBe(3);
    rmSync(file);
    expect(cache.read(dir, 'T-1')).toBeNull();
  });
});
