import { describe, expect, it } from 'vitest';
import { DEFAULT_EXCLUDE, DEFAULT_READ } from '../../src/config/schema.js';
import { compileGlob } from '../../src/workspace/scope/glob.js';
import { compileScope, defaultScope, mergeScope } from '../../src/workspace/scope/scope.js';
import { scopeStatement } from '../../src/workspace/scope/scope-statement.js';
import { scopeViolationsOf } from '../../src/workspace/task-facts.js';

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
    ['build/', 'build/out.js', true],
    ['build/', 'src/build', false],
    ['/README.md', 'docs/README.md', false],
    ['README.md', 'docs/README.md', true],
    ['file?.txt', 'file1.txt', true],
    ['[ab].txt', 'b.txt', true],
    ['[!ab].txt', 'b.txt', false],
    ['/README.md', 'README.md', true],
    ['a.b', 'aXb', false],
  ])('%s matches %s: %s', (pattern, file, expected) => {
    expect(compileGlob(pattern).matches(file)).toBe(expected);
  });

  it.each([
    ['.npmrc'],
    ['packages/web/.npmrc'],
    ['.yarnrc.yml'],
    ['.netrc'],
    ['.pypirc'],
    ['.git-credentials'],
    ['.docker/config.json'],
    ['home/.docker/config.json'],
    ['.aws/credentials'],
    ['deploy/.aws/config'],
    ['.ssh/known_hosts'],
    ['keys/id_rsa'],
    ['id_rsa.pub'],
    ['id_ed25519'],
    ['certs/client.p12'],
    ['client.pfx'],
    ['infra/prod.tfvars'],
    ['credentials.json'],
    ['config/credentials-prod.json'],
    ['.env'],
    ['secrets/a/b'],
  ])('excludes %s by default', (file) => {
    expect(compileScope(defaultScope()).access(file)).toBe('excluded');
  });

  it.each([
    ['src/index.ts'],
    ['.npmrc.example'],
    ['docker/config.json'],
    ['credentials.md'],
    ['aws/notes.md'],
  ])('keeps %s by default', (file) => {
    expect(compileScope(defaultScope()).access(file)).toBe('write');
  });

  it('makes agent-runner.yaml at the root read-only by default, and `!` lifts it', () => {
    expect(compileScope(defaultScope()).access('agent-runner.yaml')).toBe('read');
    expect(compileScope(defaultScope()).access('pkg/agent-runner.yaml')).toBe('write');
    const lifted = mergeScope(defaultScope(), { read: ['!/agent-runner.yaml'] });
    expect(compileScope(lifted).access('agent-runner.yaml')).toBe('write');
  });

  it('follows .gitignore negation: a later `!` re-includes, except below an excluded directory', () => {
    const scope = compileScope({
      exclude: ['secrets/**', '!secrets/public.txt', 'private', '!private/ok.txt', '*.log', '!keep.log'],
      read: [],
      write: [],
    });
    expect(scope.access('secrets/token.txt')).toBe('excluded');
    expect(scope.access('secrets/public.txt')).toBe('write');
    // git cannot re-include a file whose parent directory is excluded; neither can the scope.
    expect(scope.access('private/ok.txt')).toBe('excluded');
    expect(scope.access('a/debug.log')).toBe('excluded');
    expect(scope.access('keep.log')).toBe('write');
    const reExcluded = mergeScope(
      { exclude: ['.npmrc'], read: [], write: [] },
      { exclude: ['!.npmrc', '.npmrc'] },
    );
    expect(compileScope(reExcluded).access('.npmrc')).toBe('excluded');
  });

  // How fast is the bench's to say (section 6 classifies every path of a 100k-file repository); a wall-clock
  // bound here failed once on a loaded machine and proved nothing about the code.
  it('classifies 100k paths with one compiled scope', () => {
    const scope = compileScope(defaultScope());
    const paths = Array.from({ length: 100_000 }, (_, index) => `src/module-${index % 500}/file-${index}.ts`);
    let writable = 0;
    for (const file of paths) if (scope.access(file) === 'write') writable += 1;
    expect(writable).toBe(100_000);
    expect(scope.access('src/module-1/.env')).toBe('excluded');
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

  it.each([
    ['.agent-runner'],
    ['.agent-runner/task-FORGED.md'],
    ['.agent-runner/runs/T-1/events.jsonl'],
    ['.agent-runner/a/b/c/d.md'],
    ['.AGENT-RUNNER/task-X.md'],
  ])("%s is the runner's own, whatever the config says", (file) => {
    expect(compileScope(defaultScope()).access(file)).toBe('runner_owned');
    // A config that tries to hand it to the worker: re-included, lifted from read-only, written explicitly.
    const handedOver = compileScope({
      exclude: ['!/.agent-runner', '!.agent-runner/**'],
      read: ['!/.agent-runner/**'],
      write: ['.agent-runner/**', '**'],
    });
    expect(handedOver.access(file)).toBe('runner_owned');
    expect(handedOver.isWritable(file)).toBe(false);
    expect(handedOver.keepsBase(file)).toBe(true);
  });

  it('keeps the runner-owned rule to the root `.agent-runner`', () => {
    const scope = compileScope(defaultScope());
    expect(scope.access('pkg/.agent-runner/task-X.md')).toBe('write');
    expect(scope.access('.agent-runner-notes/x.md')).toBe('write');
    expect(scope.keepsBase('src/a.ts')).toBe(false);
    expect(scope.keepsBase('.env')).toBe(true);
  });

  it("reports the runner's own paths as violations, committed and uncommitted, each once per where", () => {
    const scope = compileScope(mergeScope(defaultScope(), { write: ['src/**'] }));
    const violations = scopeViolationsOf(
      {
        committed: ['src/a.ts', '.agent-runner/task-F.md', '.env', '.agent-runner/task-F.md'],
        uncommitted: ['.agent-runner/task-L.md', 'src/b.ts', 'README.md', '.agent-runner/task-F.md'],
      },
      scope,
    );
    expect(violations).toEqual([
      { path: '.agent-runner/task-F.md', access: 'runner_owned', where: 'committed' },
      { path: '.env', access: 'excluded', where: 'committed' },
      { path: '.agent-runner/task-L.md', access: 'runner_owned', where: 'uncommitted' },
      { path: 'README.md', access: 'outside_write', where: 'uncommitted' },
      { path: '.agent-runner/task-F.md', access: 'runner_owned', where: 'uncommitted' },
    ]);
    const open = compileScope(defaultScope());
    expect(scopeViolationsOf({ committed: ['.agent-runner/x.md'], uncommitted: [] }, open)).toHaveLength(1);
  });

  it('merges a task scope: excludes and reads add up, a task write replaces the config write', () => {
    const merged = mergeScope(
      { exclude: ['a'], read: ['r'], write: ['src/**'] },
      { exclude: ['b'], read: ['r', 's'], write: ['lib/**'] },
    );
    expect(merged).toEqual({ exclude: ['a', 'b'], read: ['r', 's'], write: ['lib/**'] });
    expect(mergeScope({ exclude: [], read: [], write: ['src/**'] }, {}).write).toEqual(['src/**']);
    expect(defaultScope().exclude).toEqual(DEFAULT_EXCLUDE);
    expect(defaultScope().read).toEqual(DEFAULT_READ);
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
    expect(open).toContain('`.agent-runner/` belongs to agent-runner');
  });
});
