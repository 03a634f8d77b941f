import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ExecOptions, ExecResult, SandboxRuntime } from '../../src/core/ports.js';
import type { AcceptanceCriterion, TaskFacts } from '../../src/core/types.js';
import {
  fileOnBranch,
  repositoryPath,
  runCriteriaChecks,
} from '../../src/workspace/checks/criteria-checks.js';
import {
  detectTestFramework,
  namedTestCommand,
  shellQuote,
} from '../../src/workspace/checks/test-frameworks.js';
import { git } from '../support/task-repo.js';
import { cleanFacts, finishedExec } from '../support/core-fakes.js';

async function repoWith(files: Record<string, string>, links: Record<string, string> = {}) {
  const root = await mkdtemp(path.join(tmpdir(), 'ar-criteria-'));
  onTestFinished(() => rm(root, { recursive: true, force: true }));
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'config', 'user.name', 'T');
  git(root, 'config', 'user.email', 't@example.com');
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), content);
  }
  for (const [link, target] of Object.entries(links)) symlinkSync(target, path.join(root, link));
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'c');
  return { root, head: git(root, 'rev-parse', 'HEAD') };
}

/** A sandbox runtime that records what it is asked to run and answers from a table (an honest port fake). */
class TableRuntime implements Pick<SandboxRuntime, 'exec'> {
  /** The checks' commands, in order (the clean shell's argv ends with the command). */
  readonly commands: string[] = [];
  /** Other execs: the sweep of stray processes before and after each check. */
  sweeps = 0;
  /** The git calls (the read and put-back of tracked files a check changed). */
  readonly gitCalls: string[] = [];
  /** Tracked files the checks leave changed (the git diff's answer). */
  changed: string[] = [];
  constructor(private readonly answers: Record<string, Partial<ExecResult>>) {}
  async exec(_id: string, argv: readonly string[], _options?: ExecOptions): Promise<ExecResult> {
    const result = finishedExec();
    // The sweep of leftover processes around each check is not a check.
    if (argv.includes('agent-runner-reaper')) {
      this.sweeps += 1;
      return result;
    }
    // The read of what a check changed (checks are checks): nothing, unless the test says so.
    if (argv[0] === 'git') {
      this.gitCalls.push(argv.join(' '));
      return { ...result, stdoutTail: argv.includes('diff') ? this.changed.join('\0') : '' };
    }
    const command = argv.at(-1) ?? '';
    this.commands.push(command);
    return {
      ...result,
      ...(this.answers[command] ?? { exitCode: 127, stderrTail: `bash: ${command}: command not found` }),
    };
  }
}

const facts = (headSha: string): TaskFacts => cleanFacts(headSha);

describe('criteria checks', () => {
  it('file_exists looks at the task branch with git objects; links and escaping paths do not count', async () => {
    const { root, head } = await repoWith({ 'README.md': '# x\n' }, { 'link.md': '/etc/passwd' });
    expect(await fileOnBranch(root, head, 'README.md')).toMatchObject({ exists: true });
    expect(await fileOnBranch(root, head, './README.md')).toMatchObject({ exists: true });
    expect(await fileOnBranch(root, head, 'MISSING.md')).toMatchObject({ exists: false });
    expect((await fileOnBranch(root, head, 'link.md')).reason).toMatch(/symbolic link/);
    expect((await fileOnBranch(root, head, '../etc/passwd')).reason).toMatch(/not a path inside/);
    expect(repositoryPath('/etc/passwd')).toBeNull();
    expect(repositoryPath('a/../../b')).toBeNull();
    expect(repositoryPath('src/a.ts')).toBe('src/a.ts');
  });

  it('runs command checks in the sandbox, keeps unknown kinds as not executed, and says why a test cannot run', async () => {
    const { root, head } = await repoWith({ 'README.md': '# x\n' });
    const runtime = new TableRuntime({
      'npm run e2e': { exitCode: 2, stdoutTail: 'e2e output', stderrTail: 'boom' },
    });
    const criteria: AcceptanceCriterion[] = [
      {
        id: 'AC-1',
        description: 'a',
        type: 'e2e',
        critical: true,
        check: { kind: 'command', command: 'npm run e2e' },
      },
      {
        id: 'AC-2',
        description: 'b',
        type: 'e2e',
        critical: false,
        check: { kind: 'playwright', file: 'e.spec.ts', test_name: 'works' },
      },
      {
        id: 'AC-3',
        description: 'c',
        type: 'unit',
        critical: true,
        check: { kind: 'test', test_name: 'adds' },
      },
      {
        id: 'AC-4',
        description: 'd',
        type: 'docs',
        critical: false,
        check: { kind: 'file_exists', file: 'README.md' },
      },
      { id: 'AC-5', description: 'no check', type: 'functional', critical: false },
    ];
    const results = await runCriteriaChecks(
      runtime as unknown as SandboxRuntime,
      'sb',
      criteria,
      facts(head),
      {
        repoRoot: root,
        timeoutMs: 60_000,
      },
    );
    expect(results.map((result) => [result.criterionId, result.status])).toEqual([
      ['AC-1', 'failed'],
      ['AC-2', 'not_executed'],
      ['AC-3', 'not_executable'],
      ['AC-4', 'passed'],
    ]);
    expect(results[0]).toMatchObject({
      exitCode: 2,
      outputTail: 'e2e output\n--- stderr ---\nboom',
      reason: 'exit 2',
    });
    expect(results[2]?.reason).toMatch(/no test framework detected on the task branch/);
    // Only the command check reached the sandbox, in the DoD's clean shell, with a sweep before and after it.
    expect(runtime.commands).toEqual(['npm run e2e']);
    expect(runtime.sweeps).toBe(2);
  });

  it('a test whose framework is declared only in a workspace package runs in that package', async () => {
    const { root, head } = await repoWith({
      'package.json': JSON.stringify({ private: true, scripts: { test: 'pnpm -r test' } }),
      'pnpm-workspace.yaml': 'packages:\n  - packages/*\n',
      'packages/slug/package.json': JSON.stringify({ devDependencies: { vitest: '4' } }),
      'packages/slug/src/slug.test.ts': '',
    });
    const command = namedTestCommand('vitest', 'slugify', 'src/slug.test.ts', 'packages/slug');
    expect(command).toMatch(/^cd 'packages\/slug' && PATH=/);
    const runtime = new TableRuntime({ [command]: { exitCode: 0, stdoutTail: 'Tests  1 passed (1)' } });
    const [result] = await runCriteriaChecks(
      runtime as unknown as SandboxRuntime,
      'sb',
      [
        {
          id: 'AC-1',
          description: 'slugify',
          type: 'unit',
          critical: true,
          check: { kind: 'test', test_name: 'slugify', file: 'packages/slug/src/slug.test.ts' },
        },
      ],
      facts(head),
      { repoRoot: root, timeoutMs: 60_000 },
    );
    expect(result).toMatchObject({ status: 'passed', target: command });
    expect(result?.reason).toBe('1 test(s) passed (vitest)');
  });

  it('a command check that changes tracked files fails, names them, and they are put back (checks are checks)', async () => {
    const lint = {
      id: 'AC-1',
      description: 'lint clean',
      type: 'quality',
      critical: true,
      check: { kind: 'command' as const, command: 'npm run lint -- --write' },
    };
    const { root, head } = await repoWith({ 'README.md': '# x\n' });
    const runtime = new TableRuntime({
      'npm run lint -- --write': { exitCode: 0, stdoutTail: 'fixed 2 files' },
    });
    runtime.changed = ['src/a.ts', 'src/b.ts'];
    const [result] = await runCriteriaChecks(
      runtime as unknown as SandboxRuntime,
      'sb',
      [lint],
      facts(head),
      { repoRoot: root, timeoutMs: 60_000 },
    );
    expect(result).toMatchObject({
      status: 'failed',
      exitCode: 0,
      rewrote: { paths: ['src/a.ts', 'src/b.ts'], count: 2 },
      reason: 'changed 2 tracked file(s) (put back): it did not check the commit',
    });
    expect(result?.outputTail).toMatch(
      /^The check changed 2 tracked file\(s\), so it did not check the committed tree/,
    );
    expect(runtime.gitCalls.some((call) => call.endsWith('reset -q --hard HEAD'))).toBe(true);
    // On a tree that was dirty before the checks, nothing is put back: the changes may be the worker's.
    const dirty = new TableRuntime({ 'npm run lint -- --write': { exitCode: 0 } });
    dirty.changed = ['src/a.ts'];
    await runCriteriaChecks(
      dirty as unknown as SandboxRuntime,
      'sb',
      [lint],
      { ...facts(head), dirty: true },
      { repoRoot: root, timeoutMs: 60_000 },
    );
    expect(dirty.gitCalls).toEqual([]);
  });

  it('a criterion whose command the DoD just ran on this tree takes that result instead of running it again', async () => {
    const { root, head } = await repoWith({ 'README.md': '# x\n' });
    const runtime = new TableRuntime({ 'npm run e2e': { exitCode: 0, stdoutTail: 'ran' } });
    const dod = {
      status: 'failed' as const,
      ranOnDirtyTree: false,
      source: 'package.json',
      results: [
        {
          name: 'test',
          command: 'npm test',
          status: 'failed' as const,
          exitCode: 1,
          durationMs: 4200,
          outputTail: '1 failing',
          tests: { passed: 3, failed: 1, skipped: 0 },
        },
      ],
    };
    const criterion = (id: string, command: string) => ({
      id,
      description: id,
      type: 'unit',
      critical: true,
      check: { kind: 'command' as const, command },
    });
    const [same, other] = await runCriteriaChecks(
      runtime as unknown as SandboxRuntime,
      'sb',
      [criterion('AC-1', ' npm test '), criterion('AC-2', 'npm run e2e')],
      facts(head),
      { repoRoot: root, timeoutMs: 60_000, dod },
    );
    expect(same).toMatchObject({
      status: 'failed',
      exitCode: 1,
      outputTail: '1 failing',
      tests: { passed: 3, failed: 1, skipped: 0 },
      durationMs: 4200,
    });
    expect(same?.reason).toMatch(/the DoD check "test" ran this command on this tree/);
    expect(other).toMatchObject({ status: 'passed', target: 'npm run e2e' });
    // Only the command the DoD had not run reached the sandbox.
    expect(runtime.commands).toEqual(['npm run e2e']);
  });

  it('a named test that matched nothing is not evidence, even with exit 0', async () => {
    const { root, head } = await repoWith({
      'package.json': JSON.stringify({ scripts: { test: 'node --test' } }),
    });
    const command = namedTestCommand('node:test', 'adds numbers');
    const runtime = new TableRuntime({
      [command]: { exitCode: 0, stdoutTail: '# tests 0\n# pass 0\n# skipped 3\n' },
    });
    const [result] = await runCriteriaChecks(
      runtime as unknown as SandboxRuntime,
      'sb',
      [
        {
          id: 'AC-1',
          description: 'a',
          type: 'unit',
          critical: true,
          check: { kind: 'test', test_name: 'adds numbers' },
        },
      ],
      facts(head),
      { repoRoot: root, timeoutMs: 60_000 },
    );
    expect(result).toMatchObject({ status: 'failed', exitCode: 0 });
    expect(result?.reason).toMatch(/no test ran/);
  });
});

describe('test frameworks', () => {
  it.each([
    [{ devDependencies: { vitest: '1' } }, 'vitest'],
    [{ devDependencies: { jest: '29' } }, 'jest'],
    [{ scripts: { test: 'mocha --recursive' } }, 'mocha'],
    [{ scripts: { test: 'node --test test/' } }, 'node:test'],
  ])('detects %j as %s', (pkg, framework) => {
    expect(detectTestFramework({ packageJson: JSON.stringify(pkg), files: ['package.json'] })).toBe(
      framework,
    );
  });

  it('detects go, cargo and pytest from the tree, and nothing from a bare one', () => {
    expect(detectTestFramework({ packageJson: null, files: ['go.mod'] })).toBe('go test');
    expect(detectTestFramework({ packageJson: null, files: ['Cargo.toml'] })).toBe('cargo test');
    expect(detectTestFramework({ packageJson: null, files: ['pyproject.toml'] })).toBe('pytest');
    expect(
      detectTestFramework({ packageJson: '{"scripts":{"test":"echo"}}', files: ['README.md'] }),
    ).toBeNull();
  });

  it('quotes model text: a test name cannot break out of its shell word', () => {
    const name = "x'; touch /tmp/pwned; echo '";
    expect(namedTestCommand('mocha', name)).toBe(`node_modules/.bin/mocha --grep ${shellQuote(name)}`);
    expect(shellQuote("a'b")).toBe(`'a'\\''b'`);
    expect(namedTestCommand('vitest', 'adds (1+1)', 'src/a.test.ts')).toBe(
      "node_modules/.bin/vitest run 'src/a.test.ts' -t 'adds \\(1\\+1\\)'",
    );
    expect(namedTestCommand('pytest', 'test_adds', 'tests/test_a.py')).toBe(
      "python3 -m pytest 'tests/test_a.py::test_adds'",
    );
  });
});
