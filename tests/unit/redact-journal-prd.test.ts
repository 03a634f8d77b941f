import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { EventJournal, readJournal } from '../../src/notes/event-journal.js';
import { REDACTED, createRedactor } from '../../src/notes/redact.js';
import { MAX_PRD_BYTES, loadPrd } from '../../src/prd/load-prd.js';

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-unit-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('redaction', () => {
  it('replaces known secret values and key shapes, and configured patterns', () => {
    const redact = createRedactor(['my-very-secret-value', 'short'], ['corp-[0-9]{6}']);
    const text = 'a my-very-secret-value b sk-proj-abcdefghijklmnopqrstuv c corp-123456 d short';
    expect(redact(text)).toBe(`a ${REDACTED} b ${REDACTED} c ${REDACTED} d short`);
  });
});

describe('event journal', () => {
  it('appends redacted events and reads them back, ignoring a torn last line', () => {
    const dir = tempDir();
    const journal = new EventJournal(dir, createRedactor(['secret-token-123456']));
    journal.append({ type: 'refused', reasons: ['leaked secret-token-123456'], at: '2026-01-01T00:00:00Z' });
    journal.append({ type: 'preserved', ref: 'refs/agent-runner/wip/T', at: '2026-01-01T00:00:01Z' });
    appendFileSync(journal.file, '{"type":"transi');
    const events = readJournal(journal.file);
    expect(events.map((event) => event.type)).toEqual(['refused', 'preserved']);
    expect(JSON.stringify(events)).not.toContain('secret-token-123456');
  });
});

describe('PRD loading', () => {
  it.each([
    ['missing', null, /does not exist/],
    ['empty', '  \n', /is empty/],
    ['binary', Buffer.from([0x23, 0x00, 0x01]), /looks binary/],
    ['huge', 'x'.repeat(MAX_PRD_BYTES + 1), /limit is 256 KiB/],
  ])('refuses a %s PRD with the fix', async (_name, content, message) => {
    const file = path.join(tempDir(), 'spec.md');
    if (content !== null) writeFileSync(file, content);
    const error = await loadPrd(file).catch(
      (caught: unknown) => caught as Error & { code: string; exitCode: number },
    );
    expect(error).toMatchObject({ code: 'prd_invalid', exitCode: 2 });
    expect((error as Error).message).toMatch(message);
  });

  it('reads a good PRD', async () => {
    const file = path.join(tempDir(), 'spec.md');
    writeFileSync(file, '# Title\n\nDo it.\n');
    expect(await loadPrd(file)).toBe('# Title\n\nDo it.\n');
  });
});
