import { describe, expect, it } from 'vitest';
import { readConstrainedYaml, writeConstrainedYaml } from '../../src/protocol/constrained-yaml.js';
import { extractYaml } from '../../src/protocol/extract-yaml.js';
import { formatProtocolIssue, type ProtocolIssue } from '../../src/protocol/protocol-issue.js';

function issuesOf(text: string): ProtocolIssue[] {
  const result = readConstrainedYaml(text);
  if (result.ok) throw new Error(`expected issues, got ${JSON.stringify(result.document.value)}`);
  return result.issues;
}

function valueOf(text: string): unknown {
  const result = readConstrainedYaml(text);
  if (!result.ok) throw new Error(result.issues.map(formatProtocolIssue).join('\n'));
  return result.document.value;
}

describe('readConstrainedYaml: accepted subset', () => {
  it('reads scalars, maps, sequences and block scalars', () => {
    const text = [
      '---',
      '# a comment',
      'name: plain',
      'quoted: "a: b"',
      'number: 3',
      'flag: true',
      'nothing: null',
      'list:',
      '  - one',
      '  - two',
      'literal: |',
      '  line 1',
      '  line 2',
      'folded: >',
      '  folded',
      '  text',
      'empty_list: []',
      'empty_map: {}',
      'short_list: [a, "b c"]',
      '',
    ].join('\n');
    expect(valueOf(text)).toEqual({
      name: 'plain',
      quoted: 'a: b',
      number: 3,
      flag: true,
      nothing: null,
      list: ['one', 'two'],
      literal: 'line 1\nline 2\n',
      folded: 'folded text\n',
      empty_list: [],
      empty_map: {},
      short_list: ['a', 'b c'],
    });
  });

  it('keeps tabs inside a block scalar (they are content, not indentation)', () => {
    expect(valueOf('make: |\n  all:\n  \techo hi\n')).toEqual({ make: 'all:\n\techo hi\n' });
  });

  it('locates values by path, and the nearest ancestor for a missing path', () => {
    const result = readConstrainedYaml('a:\n  b:\n    - x\n    - y\n', { lineOffset: 10 });
    if (!result.ok) throw new Error('unexpected');
    expect(result.document.locate(['a', 'b', 1])).toEqual({ line: 14, column: 7 });
    expect(result.document.locate(['a', 'missing'])).toEqual({ line: 12, column: 3 });
  });
});

describe('readConstrainedYaml: refused features, each with line and column', () => {
  it.each([
    ['anchor', 'a: &x 1\nb: 2\n', { line: 1, column: 4 }, /anchor `&x` is refused/],
    ['alias', 'a: 1\nb: *x\n', { line: 2, column: 4 }, /alias `\*x` is refused/],
    ['core tag', 'a: !!str 1\n', { line: 1, column: 4 }, /tag `!!str` is refused/],
    ['custom tag', 'a:\n  b: !custom x\n', { line: 2, column: 6 }, /tag `!custom` is refused/],
    ['two documents', 'a: 1\n---\nb: 2\n', { line: 2, column: 1 }, /second YAML document/],
    ['document end marker', 'a: 1\n...\n', { line: 2, column: 1 }, /end marker `\.\.\.` is refused/],
    ['directive', '%YAML 1.2\n---\na: 1\n', { line: 1, column: 1 }, /directive `%YAML 1.2` is refused/],
    ['tab indentation', 'a:\n\tb: 1\n', { line: 2, column: 1 }, /tab is used for indentation/],
    [
      'duplicate key',
      'a: 1\nb: 2\na: 3\n',
      { line: 3, column: 1 },
      /duplicate key `a` \(first written on line 1\)/,
    ],
    ['nested duplicate key', 'p:\n  x: 1\n  x: 2\n', { line: 3, column: 3 }, /duplicate key `x`/],
    ['flow map', 'a: {b: 1}\n', { line: 1, column: 4 }, /flow collection is refused/],
    ['nested flow list', 'a: [[1]]\n', { line: 1, column: 4 }, /flow collection is refused/],
    ['complex key', '? [a]\n: 1\n', { line: 1, column: 3 }, /refused/],
  ])('%s', (_name, text, position, message) => {
    const issues = issuesOf(text);
    expect(issues[0]).toMatchObject(position);
    expect(issues.map((issue) => issue.message).join('\n')).toMatch(message);
  });

  it('reports every anchor, alias and tag, not just the first', () => {
    const issues = issuesOf('a: &x 1\nb: *x\nc: !!int 3\n');
    expect(issues.map((issue) => issue.line)).toEqual([1, 2, 3]);
  });

  it('shifts lines by the offset of the extracted block', () => {
    expect(readConstrainedYaml('a: &x 1\n', { lineOffset: 3 })).toMatchObject({
      ok: false,
      issues: [{ line: 4 }],
    });
  });

  it('reports plain syntax errors with a position', () => {
    const issues = issuesOf('a: "unterminated\n');
    expect(issues[0]?.line).toBeGreaterThanOrEqual(1);
    expect(issues[0]?.message).toMatch(/invalid YAML/);
  });
});

describe('extractYaml', () => {
  it('takes the whole reply when there is no fence', () => {
    expect(extractYaml('type: x\n')).toEqual({
      ok: true,
      yaml: { text: 'type: x\n', lineOffset: 0, fenced: false },
    });
  });

  it('extracts a single fenced yaml block with prose around it', () => {
    const reply = 'Here is the plan:\n\n```yaml\ntype: x\nversion: 1\n```\nLet me know.\n';
    expect(extractYaml(reply)).toEqual({
      ok: true,
      yaml: { text: 'type: x\nversion: 1\n', lineOffset: 3, fenced: true },
    });
  });

  it('accepts a fence without a language and a ~~~ fence', () => {
    expect(extractYaml('```\na: 1\n```')).toMatchObject({ ok: true, yaml: { text: 'a: 1\n' } });
    expect(extractYaml('~~~yml\na: 1\n~~~')).toMatchObject({ ok: true, yaml: { text: 'a: 1\n' } });
  });

  it.each([
    [
      'prose before unfenced YAML',
      'Sure, here it is.\ntype: x\n',
      /line 1, column 1: text before the YAML document/,
    ],
    [
      'two fenced blocks',
      '```yaml\na: 1\n```\nand\n```yaml\nb: 2\n```\n',
      /2 fenced blocks \(starting on lines 1, 5\)/,
    ],
    [
      'an unclosed fence',
      'ok\n```yaml\na: 1\n',
      /line 2, column 1: a fenced block is opened here but never closed/,
    ],
    ['a block in another language', '```json\n{"a": 1}\n```\n', /marked `json`/],
    ['an empty reply', '  \n', /the reply is empty/],
  ])('refuses %s', (_name, reply, message) => {
    const result = extractYaml(reply);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues.map(formatProtocolIssue).join('\n')).toMatch(message);
  });
});

describe('writeConstrainedYaml', () => {
  const value = {
    type: 'next_action',
    version: 1,
    payload: {
      multi: 'line 1\nline 2\n',
      no_final_newline: 'a\nb',
      looks_boolean: 'true',
      looks_number: '007',
      special: '*not an alias',
      colon: 'a: b',
      hash: 'x # y',
      leading_spaces: '  indented',
      tabbed: 'make:\n\tall\n',
      empty_list: [],
      empty_map: {},
      nested: [{ id: 'AC-1', critical: true, tags: ['a', 'b'] }],
      nothing: null,
    },
  };

  it('round-trips through the reader unchanged', () => {
    const text = writeConstrainedYaml(value);
    expect(valueOf(text)).toEqual(value);
  });

  it('uses 2-space block style and a literal block scalar, never anchors or tags', () => {
    const shared = { a: 1 };
    const text = writeConstrainedYaml({ first: shared, second: shared, list: ['x'], text: 'one\ntwo\n' });
    expect(text).toBe('first:\n  a: 1\nsecond:\n  a: 1\nlist:\n  - x\ntext: |\n  one\n  two\n');
    expect(readConstrainedYaml(text).ok).toBe(true);
  });
});
