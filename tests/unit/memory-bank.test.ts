import { symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  formatEntry,
  nextEntryName,
  parseEntry,
  type MemoryBankEntry,
} from '../../src/memory/memory-entry.js';
import {
  addMemoryEntry,
  commitMemoryFiles,
  findEntry,
  readMemoryAtCommit,
  readMemoryDir,
  setMemoryStatus,
} from '../../src/memory/memory-store.js';
import {
  MEMORY_INSTRUCTIONS_MAX_CHARS,
  MEMORY_SUMMARY_MAX_CHARS,
  memoryBankView,
} from '../../src/memory/memory-view.js';
import { createTempRepo } from '../support/git-repo.js';

const FRONT = {
  title: 'Queue on PostgreSQL',
  status: 'active',
  source: 'person',
  created: '2026-11-28T10:00:00Z',
} as const;

function entry(id: number, overrides: Partial<MemoryBankEntry> = {}): MemoryBankEntry {
  const name = `${String(id).padStart(4, '0')}-entry-${id}`;
  return {
    ...FRONT,
    id: name,
    file: `.agent-runner/memory/${name}.md`,
    body: `Decision ${id}.`,
    ...overrides,
  };
}

describe('memory entry files', () => {
  it('round-trips the front matter and the body', () => {
    const text = formatEntry(FRONT, 'Use pg-boss.\n\nNot Redis.');
    expect(text.startsWith('---\ntitle: Queue on PostgreSQL\nstatus: active\n')).toBe(true);
    const parsed = parseEntry(text, 'm/0001-queue-on-postgresql.md');
    expect(parsed).toEqual({
      ...FRONT,
      id: '0001-queue-on-postgresql',
      file: 'm/0001-queue-on-postgresql.md',
      body: 'Use pg-boss.\n\nNot Redis.',
    });
  });

  it.each([
    ['no front matter', 'just text', /no front matter/],
    ['a bad status', '---\ntitle: t\nstatus: maybe\nsource: p\ncreated: x\n---\nb', /status/],
    ['a missing title', '---\nstatus: active\nsource: p\ncreated: x\n---\nb', /title/],
    ['an unknown key', '---\ntitle: t\nstatus: active\nsource: p\ncreated: x\nrun: rm -rf /\n---\nb', /run/],
    ['an alias', '---\ntitle: &a t\nstatus: active\nsource: *a\ncreated: x\n---\nb', /front matter/],
  ])('refuses %s, saying which file', (_name, text, message) => {
    expect(() => parseEntry(text, 'm/0001-x.md')).toThrow(message);
    expect(() => parseEntry(text, 'm/0001-x.md')).toThrow(/m\/0001-x\.md/);
  });

  it('numbers new files after the highest in use, with a slug of the title', () => {
    expect(nextEntryName([], 'Use PostgreSQL, not Redis!')).toBe('0001-use-postgresql-not-redis.md');
    expect(nextEntryName(['0002-a.md', '0010-b.md', 'README.md'], '¿¿')).toBe('0011-entry.md');
  });
});

describe('memory bank view', () => {
  it('summarises and lists active entries only, with their full text for the instructions file', () => {
    const view = memoryBankView([
      entry(2),
      entry(1),
      entry(3, { status: 'archived', body: 'ARCHIVED-TEXT' }),
    ]);
    expect(view.active).toBe(2);
    expect(view.archived).toBe(1);
    expect(view.files).toEqual([
      '.agent-runner/memory/0001-entry-1.md',
      '.agent-runner/memory/0002-entry-2.md',
    ]);
    expect(view.summary.split('\n')).toHaveLength(2);
    expect(view.instructions).toContain('Decision 1.');
    expect(view.instructions).toContain('Decision 2.');
    expect(`${view.summary}${view.instructions}`).not.toContain('ARCHIVED-TEXT');
    expect(view.section).toContain('- .agent-runner/memory/0002-entry-2.md');
  });

  it('is empty without active entries', () => {
    const view = memoryBankView([entry(1, { status: 'archived' })]);
    expect(view.instructions).toBe('');
    expect(view.section).toBe('');
  });

  it('bounds the summary and the instructions and says what was cut', () => {
    const many = Array.from({ length: 300 }, (_, index) => entry(index + 1, { body: 'x'.repeat(5000) }));
    const view = memoryBankView(many);
    expect(view.summary.length).toBeLessThanOrEqual(MEMORY_SUMMARY_MAX_CHARS + 100);
    expect(view.summary).toMatch(/\[cut: \d+ more entries not summarised/);
    expect(view.instructions.length).toBeLessThanOrEqual(MEMORY_INSTRUCTIONS_MAX_CHARS + 100);
    expect(view.instructions).toMatch(/\[cut: \d+ more entries/);
    expect(view.files.at(-1)).toBe('… [cut: 200 more files in the same folder]');
  });

  it('neutralises control characters in entry text', () => {
    const view = memoryBankView([entry(1, { body: 'a\u0000b\u001b[31mc' })]);
    expect(view.instructions).not.toContain(String.fromCharCode(0));
    expect(view.instructions).not.toContain(String.fromCharCode(27));
    expect(view.instructions).toContain('a\\x00b\\x1b[31mc');
  });
});

describe('memory store', () => {
  it('adds, lists, archives and commits only its own files', async () => {
    const repo = await createTempRepo();
    await repo.commit('base', { 'README.md': 'hi\n' });
    const dir = '.agent-runner/memory';
    const first = await addMemoryEntry(repo.root, dir, FRONT, 'Use pg-boss.');
    const second = await addMemoryEntry(repo.root, dir, { ...FRONT, title: 'Second' }, 'Two.');
    expect([first, second]).toEqual([`${dir}/0001-queue-on-postgresql.md`, `${dir}/0002-second.md`]);
    await writeFile(path.join(repo.root, 'README.md'), 'person’s own change\n');
    const listed = await readMemoryDir(repo.root, dir);
    expect(listed.problems).toEqual([]);
    expect(listed.entries.map((item) => item.title)).toEqual(['Queue on PostgreSQL', 'Second']);
    const found = findEntry(listed.entries, '2');
    expect(found?.file).toBe(second);
    await setMemoryStatus(repo.root, found!, 'archived');
    expect(findEntry((await readMemoryDir(repo.root, dir)).entries, '0002-second')?.status).toBe('archived');
    const commit = await commitMemoryFiles(repo.root, [first, second], 'Memory: two entries');
    expect(repo.git('show', '--name-only', '--format=', commit).trim().split('\n').sort()).toEqual([
      first,
      second,
    ]);
    expect(repo.git('status', '--porcelain')).toContain('README.md');
  });

  it('reads a commit, not the working tree, and skips links and bad files with a reason', async () => {
    const repo = await createTempRepo();
    const dir = 'docs/decisions';
    const base = await repo.commit('base', {
      [`${dir}/0001-kept.md`]: formatEntry(FRONT, 'Committed text.'),
      [`${dir}/0002-broken.md`]: 'no front matter',
      [`${dir}/notes.txt`]: 'ignored',
    });
    await symlink('/etc/passwd', path.join(repo.root, dir, '0003-link.md'));
    repo.git('add', '-A');
    const withLink = await repo.commit('link');
    await writeFile(
      path.join(repo.root, dir, '0001-kept.md'),
      formatEntry(FRONT, 'CHANGED IN THE WORKSPACE'),
    );
    const atBase = await readMemoryAtCommit(repo.root, base, dir);
    expect(atBase.entries.map((item) => item.body)).toEqual(['Committed text.']);
    expect(atBase.problems.join('\n')).toContain('0002-broken.md: no front matter');
    const atLink = await readMemoryAtCommit(repo.root, withLink, dir);
    expect(atLink.problems.join('\n')).toContain('0003-link.md: not an entry file');
    const fromDir = await readMemoryDir(repo.root, dir);
    expect(fromDir.entries.map((item) => item.body)).toEqual(['CHANGED IN THE WORKSPACE']);
    expect(fromDir.problems.join('\n')).toMatch(/0003-link\.md/);
  });
});
