import { describe, expect, it } from 'vitest';
import { LineSplitter, OutputTail } from '../../src/sandbox/output-tail.js';

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
