/**
 * Every relative link and anchor of README.md and docs/*.md resolves (a real Markdown parser, GitHub's heading
 * anchors), every page of docs/ is reachable from the README, and the README stays a front page.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { anchorsOf, brokenLinks, linksOf } from '../support/markdown-links.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const docs = readdirSync(path.join(root, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => path.join(root, 'docs', name));
const readme = path.join(root, 'README.md');

describe('documentation links', () => {
  it('the checker sees a missing page, a missing anchor and an anchor in a table, and accepts GitHub slugs', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ar-links-'));
    writeFileSync(
      path.join(dir, 'a.md'),
      [
        '# Workers: Codex CLI, Claude Code and `opencode`',
        '',
        '## What happens when...',
        '',
        '## What happens when...',
        '',
        '| Key | More |',
        '|---|---|',
        '| x | [gone](b.md#no-such-heading) |',
        '',
        '- [fine](b.md#disk-caps), [missing](c.md), [self](#workers-codex-cli-claude-code-and-opencode)',
        '- [twice](#what-happens-when-1) [web](https://example.invalid/x#y) ![img](pic.png)',
        '',
        '[ref]: #nowhere',
        'A [reference link][ref].',
      ].join('\n'),
    );
    writeFileSync(path.join(dir, 'b.md'), '# B\n\n## Disk caps\n');
    writeFileSync(path.join(dir, 'pic.png'), '');
    const broken = brokenLinks(path.join(dir, 'a.md')).map((link) => link.href);
    expect(broken).toEqual(['b.md#no-such-heading', 'c.md', '#nowhere']);
    expect(anchorsOf(readFileSync(path.join(dir, 'a.md'), 'utf8'))).toEqual(
      new Set(['workers-codex-cli-claude-code-and-opencode', 'what-happens-when', 'what-happens-when-1']),
    );
  });

  it.each([readme, ...docs].map((file) => [path.relative(root, file), file]))(
    '%s: every relative link and anchor resolves',
    (_name, file) => {
      expect(brokenLinks(file)).toEqual([]);
    },
  );

  it('every page of docs/ is linked from the README', () => {
    const linked = new Set(
      linksOf(readFileSync(readme, 'utf8')).map((href) => path.resolve(root, href.split('#')[0] ?? '')),
    );
    for (const page of docs) expect(linked.has(page), path.relative(root, page)).toBe(true);
  });
});

describe('the README as a front page', () => {
  const text = readFileSync(readme, 'utf8');

  it('is at most 250 lines and starts, after its introduction, with the two set-up commands', () => {
    expect(text.split('\n').length).toBeLessThanOrEqual(250);
    const firstSection = text.indexOf('\n## ');
    const firstBlock = text.slice(
      text.indexOf('```bash', firstSection),
      text.indexOf('```\n', text.indexOf('```bash', firstSection) + 7),
    );
    expect(text.slice(firstSection, text.indexOf('\n', firstSection + 1))).toMatch(/^\n## Set-up/);
    expect(firstBlock).toContain('bash scripts/setup.sh && bash examples/run-demo.sh');
    expect(firstBlock).toContain('bash scripts/setup.sh && npm test');
  });

  it(".ci/run runs exactly the README's test command", () => {
    const ci = readFileSync(path.join(root, '.ci/run'), 'utf8').trim().split('\n');
    expect(ci.at(-1)).toBe('bash scripts/setup.sh && npm test');
  });
});
