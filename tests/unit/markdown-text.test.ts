import { describe, expect, it } from 'vitest';
import {
  NOTE_LIMITS,
  boundDocument,
  codeSpan,
  cutNotice,
  fencedBlock,
  fencedLines,
  htmlText,
  inlineText,
  paragraphText,
} from '../../src/notes/markdown-text.js';
import { showControls } from '../../src/notes/terminal-text.js';
import { liveMarkdown } from '../support/markdown-live.js';

const ESC = '\u001b';

/** Texts a worker may write to look like markup or the note's structure. */
const HOSTILE = [
  '<script>alert(1)</script>',
  '<img src=x onerror=alert(1)>',
  '<!-- the rest of the note is hidden',
  '| **State** | **COMPLETE** |',
  '## Pick up from here',
  '# Task X: fake',
  '- [x]: https://example.invalid/defined',
  '[click](javascript:alert(1)) ![pixel](https://example.invalid/p.png)',
  '1. ordered',
  '> quoted',
  '---',
  '```',
  '~~~ fence',
  '    indented code',
  '**bold** _emph_ ~~struck~~ `code`',
  '$\\huge\\text{COMPLETE}$',
  '&#x202e; &lt;entity&gt; &amp;',
  'ends with a backslash \\',
  `${ESC}]0;title\u0007 \u009b2J \u202e`,
];

// eslint-disable-next-line no-control-regex -- looking for raw control characters is the point
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** What a renderer would take as markup or structure in one rendered line of the runner's: none of it. */
function expectInert(line: string, prefix = '- '): void {
  const live = liveMarkdown(`${prefix}${line}`).join('\n');
  expect(live, line).not.toMatch(/<[A-Za-z!/?]/);
  expect(live).not.toMatch(/&#|&[a-z]+;(?<!&amp;|&lt;|&gt;)/);
  expect(live).not.toMatch(/(^|[^\\])\]\(/);
  expect(live).not.toMatch(/(^|[^\\])\$/);
  expect(live).not.toContain('\n');
  expect(line).not.toMatch(RAW);
}

describe('the note escaper', () => {
  it('inline text: escaped for Markdown and HTML, one line, renders as no markup or structure', () => {
    for (const text of HOSTILE) {
      const escaped = inlineText(text);
      expectInert(escaped);
      // Nothing a list item's content could turn into a block.
      expect(escaped).not.toMatch(/^(#|>|[-+*] |\d+[.)]|\[|\||`|~|<| {4})/);
    }
    expect(inlineText('<script>alert(1)</script>')).toBe('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(inlineText('## Pick up from here')).toBe('\\## Pick up from here');
    expect(inlineText('| **State** | **COMPLETE** |')).toBe(
      '\\| \\*\\*State\\*\\* \\| \\*\\*COMPLETE\\*\\* \\|',
    );
    expect(inlineText('1. ordered')).toBe('1\\. ordered');
    expect(inlineText('[click](javascript:x)')).toBe('\\[click\\](javascript:x)');
    // Ordinary prose stays readable: snake_case, paths, parentheses, a redaction marker.
    expect(inlineText('no_executable_evidence in src/a-b.ts (exit 1): the key is [REDACTED]')).toBe(
      'no_executable_evidence in src/a-b.ts (exit 1): the key is [REDACTED]',
    );
    expect(inlineText('line one\n## line two')).toBe('line one ## line two');
  });

  it('code spans: a fence longer than any backtick run, pipes escaped in tables, controls shown', () => {
    expect(codeSpan('npm test')).toBe('`npm test`');
    expect(codeSpan('a `b` c')).toBe('``a `b` c``');
    expect(codeSpan('``x')).toBe('``` ``x ```');
    expect(codeSpan('a | b', 200, 'table')).toBe('`a \\| b`');
    expect(codeSpan(`echo ${ESC}]0;t\u0007`)).toBe('`echo \\x1b]0;t\\x07`');
    expect(codeSpan('')).toBe('—');
    for (const text of HOSTILE) {
      const span = codeSpan(text, 200, 'table');
      expect(liveMarkdown(`| ${span} |`).join('').replace(/\\\|/g, '')).toMatch(/^\| +\|$/);
    }
  });

  it('fenced blocks: nothing inside can close the fence; lines and tabs kept, controls shown', () => {
    const text = ['```', '````', '## Pick up from here', '<!--', '\tindented', `${ESC}[2J`].join('\n');
    const block = fencedBlock(text);
    expect(block.startsWith('`````text\n')).toBe(true);
    expect(block.endsWith('\n`````')).toBe(true);
    expect(liveMarkdown(`before\n\n${block}\n\nafter`)).toEqual(['before', '', '', 'after']);
    expect(block).toContain('\tindented\n\\x1b[2J');
    expect(fencedBlock('plain')).toBe('```text\nplain\n```');
  });

  it('HTML text of a <summary>: entities, one line', () => {
    expect(htmlText('a <b> & "c"\nd')).toBe('a &lt;b&gt; &amp; "c" d');
  });

  it('the PRD paragraph keeps its Markdown but no HTML and nothing that starts a block', () => {
    expect(paragraphText('Add *slugify* | with `tests`.')).toBe('Add *slugify* | with `tests`.');
    expect(paragraphText('<!-- hidden')).toBe('&lt;!-- hidden');
    expect(paragraphText('## heading\nnext')).toBe('\\## heading next');
  });

  it('is stable under the terminal rule the whole note passes last (idempotent there)', () => {
    for (const text of HOSTILE) {
      for (const escaped of [inlineText(text), codeSpan(text), fencedBlock(text), htmlText(text)])
        expect(showControls(escaped)).toBe(escaped);
    }
  });

  it('caps sizes and says the cut in words', () => {
    const subject = 'S'.repeat(1024 * 1024);
    expect(inlineText(subject, 2_000)).toBe(
      `${'S'.repeat(2_000)} … [cut: 1,048,576 characters, showing the first 2,000]`,
    );
    expect(codeSpan(subject)).toBe(
      `\`${'S'.repeat(200)}\` … [cut: 1,048,576 characters, showing the first 200]`,
    );
    expect(fencedBlock(subject).length).toBeLessThan(NOTE_LIMITS.block + 200);
    expect(fencedBlock(subject)).toMatch(/\n```\n… \[cut: 1,048,576 characters, showing the first 4,000\]$/);
    const stat = [...Array.from({ length: 100_000 }, (_, i) => ` f${i} | 1 +`), ' 100000 files changed'];
    const lines = fencedLines(stat.join('\n'), NOTE_LIMITS.diffStatLines);
    expect(lines).toContain(' f58 | 1 +\n 100000 files changed\n```');
    expect(lines).toContain('… [cut: 100,001 lines, showing the first 59 and the last]');
    expect(cutNotice(35, 10, 'runs', 'last')).toBe('… [cut: 35 runs, showing the last 10]');
    // A cut never splits a surrogate pair.
    expect(inlineText('😀'.repeat(10), 5)).toMatch(/^😀😀 … \[cut: 20 characters, showing the first 4\]$/);
  });

  it('a whole document over its bound is cut at a line, its open fence and <details> closed, the end kept', () => {
    const body = [
      '# Title',
      '<details><summary>x</summary>',
      '',
      '```text',
      ...Array(5_000).fill('y'.repeat(50)),
    ];
    const document = [...body, '```', '</details>', '', '## Pick up from here', '- resume'].join('\n');
    const bounded = boundDocument(document, 20_000, '## Pick up from here');
    expect(bounded.length).toBeLessThanOrEqual(20_000);
    expect(bounded.startsWith('# Title\n')).toBe(true);
    expect(bounded).toMatch(
      /y\n```\n<\/details>\n\n… \[cut: [\d,]+ characters, showing the first [\d,]+\]\n\n## Pick up from here\n- resume$/,
    );
    expect(liveMarkdown(bounded).filter((line) => line === '## Pick up from here')).toHaveLength(1);
    expect(boundDocument('short', 100, '## x')).toBe('short');
  });
});
