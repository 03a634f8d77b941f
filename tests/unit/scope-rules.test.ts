import { describe, expect, it } from 'vitest';
import { DEFAULT_EXCLUDE } from '../../src/config/schema.js';
import { compileGlob } from '../../src/workspace/glob.js';
import { compileScope, defaultScope, mergeScope } from '../../src/workspace/scope.js';
import { scopeStatement } from '../../src/workspace/scope-statement.js';

describe('scope globs', () => {
  it.each([
    ['**/.env', '.env', true],
    ['**/.env', 'app/config/.env', true],
    ['**/.env', 'app/.envrc', false],
    ['**/.env.*', 'web/.env.local', true],
    ['**/secrets/**', 'secrets/token.txt', true],
    ['**/secrets/**', 'a/secrets/deep/x.json', true],
    ['**/secrets/**', 'secretsfile', false],
    ['**/*.pem', 'certs/server.pem', true],
    ['**/*.key', 'id.key', true],
    ['*.md', 'docs/guide/intro.md', true],
    ['docs', 'docs/guide/intro.md', true],
    ['docs/*.md', 'docs/guide/intro.md', false],
    ['docs/*.md', 'docs/intro.md', true],
    ['src/**', 'src/a/b.ts', true],
    ['src/**', 'srcx/a.ts', false],
    ['src/**/*.test.ts', 'src/a/b.test.ts', true],
    ['src/**/*.test.ts', 'src/b.test.ts', true],
    ['src/{a,b}.ts', 'src/b.ts', true],
    ['src/{a,b}.ts', 'src/c.ts', false],
    ['file?.txt', 'file1.txt', true],
    ['[ab].txt', 'b.txt', true],
    ['[!ab].txt', 'b.txt', false],
    ['/README.md', 'README.md', true],
    ['a.b', 'aXb', false],
  ])('%s matches %s: %s', (pattern, file, expected) => {
    expect(compileGlob(pattern).matches(file)).toBe(expected);
  });

  it('classifies with exclude > read > write, and an empty write means everything else', () => {
    const scope = compileScope({ exclude: DEFAULT_EXCLUDE, read: ['docs/**'], write: [] });
    expect(scope.access('.env')).toBe('excluded');
    expect(scope.access('docs/a.md')).toBe('read');
    expect(scope.access('src/a.ts')).toBe('write');
    const narrow = compileScope({ exclude: DEFAULT_EXCLUDE, read: ['src/generated/**'], write: ['src/**'] });
    expect(narrow.access('src/a.ts')).toBe('write');
    expect(narrow.access('src/generated/x.ts')).toBe('read');
    expect(narrow.access('package.json')).toBe('outside_write');
    expect(narrow.access('src/secrets/k.txt')).toBe('excluded');
    expect(narrow.isWritable('package.json')).toBe(false);
  });

  it('merges a task scope: excludes and reads add up, a task write replaces the config write', () => {
    const merged = mergeScope(
      { exclude: ['a'], read: ['r'], write: ['src/**'] },
      { exclude: ['b'], read: ['r', 's'], write: ['lib/**'] },
    );
    expect(merged).toEqual({ exclude: ['a', 'b'], read: ['r', 's'], write: ['lib/**'] });
    expect(mergeScope({ exclude: [], read: [], write: ['src/**'] }, {}).write).toEqual(['src/**']);
    expect(defaultScope().exclude).toEqual(DEFAULT_EXCLUDE);
  });

  it('states the scope for the prompt', () => {
    const text = scopeStatement({ exclude: ['**/.env'], read: ['docs/**'], write: ['src/**'] });
    expect(text).toContain('`src/**`');
    expect(text).toContain('Read-only (present, but writing fails): `docs/**`');
    expect(text).toContain('Not present in the sandbox at all');
    expect(text).toContain('Every other file is read-only.');
    const open = scopeStatement({ exclude: [], read: [], write: [] });
    expect(open).toContain('You may change any file');
    expect(open).not.toContain('Not present');
  });
});
