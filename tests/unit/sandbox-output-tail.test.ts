import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DEFAULT_MAX_FILE_BYTES, OutputSink } from '../../src/sandbox/exec-output.js';
import { LineSplitter, OutputTail, tailOf } from '../../src/sandbox/output-tail.js';

describe('OutputTail', () => {
  it('keeps only the last bytes, across chunks and for one chunk larger than the limit', () => {
    const tail = new OutputTail(5);
    tail.write(Buffer.from('abc'));
    tail.write(Buffer.from('defg'));
    expect(tail.toString()).toBe('cdefg');
    tail.write(Buffer.from('0123456789'));
    expect(tail.toString()).toBe('56789');
    expect(tail.byteLength).toBe(5);
  });

  it('drops a character cut in half at the start instead of showing garbage', () => {
    const tail = new OutputTail(3);
    tail.write(Buffer.from('xé€', 'utf8')); // é is 2 bytes, € is 3: the tail is exactly "€"
    expect(tail.toString()).toBe('€');
    tail.write(Buffer.from('a'));
    // "€" lost its first byte: the two bytes left of it are dropped, not shown as U+FFFD.
    expect(tail.toString()).toBe('a');
  });
});

describe('LineSplitter', () => {
  it('joins lines split across chunks, strips \\r and keeps multi-byte characters whole', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    const bytes = Buffer.from('one\r\ntwo €\nthr', 'utf8');
    for (const byte of bytes) splitter.write(Buffer.from([byte]));
    splitter.write(Buffer.from('ee'));
    splitter.end();
    expect(lines).toEqual(['one', 'two €', 'three']);
  });

  it('delivers an endless line in bounded pieces', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line), 4);
    splitter.write(Buffer.from('abcdefghij\nk'));
    splitter.end();
    expect(lines).toEqual(['abcd', 'efgh', 'ij', 'k']);
  });
});

describe('OutputSink log file cap', () => {
  it('cuts the file at its cap and says so; the tail and the lines still see everything', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ar-output-cap-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    for (const redact of [undefined, (text: string) => text.replaceAll('secret', '[redacted]')]) {
      const file = path.join(dir, `out-${redact ? 'redacted' : 'raw'}.log`);
      let lines = 0;
      const sink = await OutputSink.open({
        filePath: file,
        tailBytes: 16,
        onLine: () => (lines += 1),
        maxFileBytes: 1024 ** 2,
        ...(redact ? { redact } : {}),
      });
      const line = `${'x'.repeat(1023)}\n`;
      for (let index = 0; index < 3 * 1024; index += 1) await sink.write(Buffer.from(line));
      await sink.write(Buffer.from('the end\n'));
      await sink.close();
      const written = readFileSync(file, 'utf8');
      // The probe: 3 MiB went in, and the file's first MiB is what was written.
      expect(lines).toBe(3 * 1024 + 1);
      expect(written.startsWith(line)).toBe(true);
      expect(Buffer.byteLength(written)).toBeLessThan(1024 ** 2 + 200);
      expect(written).toMatch(
        /\[agent-runner: this log was cut at 1048576 bytes; 2097160 more bytes were not kept\]\n$/,
      );
      expect(sink.tail.toString()).toContain('the end');
    }
  });

  it('has a default cap', () => {
    expect(DEFAULT_MAX_FILE_BYTES).toBe(64 * 1024 ** 2);
  });
});

describe('tailOf: the one text tail of a command', () => {
  it('puts stderr after stdout under its own line, without colours, and keeps the end', () => {
    expect(tailOf('\u001b[32mok\u001b[39m\n', 'boom\n', 100)).toBe('ok\n--- stderr ---\nboom');
    expect(tailOf('only stdout\n\n', '  \n', 100)).toBe('only stdout');
    expect(tailOf('0123456789', '', 4)).toBe('…6789');
  });
});
