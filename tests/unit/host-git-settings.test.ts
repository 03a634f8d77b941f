/**
 * Host git runs nothing the worker chose (real git, no Docker). The person's global config (a test HOME) names
 * a smudge/clean filter, a textconv, a merge driver and a hooks directory, each leaving a line in a canary file
 * when it runs; a commit's `.gitattributes` names them. Each test first shows the program running under plain
 * git as the person would run it, then that agent-runner's host git (git-command.ts) does not run it. Also: the
 * time limit of a host git call, with its whole process group stopped.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { DEFAULT_EXCLUDE } from '../../src/config/schema.js';
import { AgentRunnerError } from '../../src/errors.js';
import { git, tryGit } from '../../src/workspace/git/git-command.js';
import {
  NO_DIFF_PROGRAMS,
  configuredPrograms,
  mayApplyAttributes,
  withoutDiffPrograms,
} from '../../src/workspace/git/host-git-settings.js';
import { prepareTaskWorkspace } from '../../src/workspace/prepare-task-workspace.js';
import { syncBack } from '../../src/workspace/sandbox-repo/sync-back.js';
import { createTempRepo, runGit, type TempRepo } from '../support/git-repo.js';

const IDENTITY = {
  GIT_AUTHOR_NAME: 'Test Person',
  GIT_AUTHOR_EMAIL: 'person@example.test',
  GIT_COMMITTER_NAME: 'Test Person',
  GIT_COMMITTER_EMAIL: 'person@example.test',
};

/** The process environment without GIT_* variables. */
function baseEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('GIT_')));
}

/** The test's own git for setting things up: no global or system config at all. */
function setupGit(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...baseEnvironment(), ...IDENTITY, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' },
  });
}

interface Person {
  home: string;
  /** What ran so far, one line per run: `smudge <dir>`, `clean <dir>`, `textconv`, `merge`, `hook`. */
  canary(): string;
  clear(): void;
  /** Plain git as the person runs it: their HOME, so their global config. */
  git(cwd: string, ...args: string[]): string;
}

/**
 * A person whose global config (`$HOME/.gitconfig`) defines the filter, diff driver and merge driver `evil`
 * and a hooks directory, all writing to the canary. HOME is the test's from here on, for agent-runner's git too.
 */
async function personWithPrograms(): Promise<Person> {
  const home = await mkdtemp(path.join(tmpdir(), 'ar-hostgit-home-'));
  onTestFinished(() => rm(home, { recursive: true, force: true }));
  const canary = path.join(home, 'canary');
  mkdirSync(path.join(home, 'hooks'));
  const script = (name: string, body: string): string => {
    const file = path.join(home, name);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  };
  const smudge = script('smudge.sh', `echo "smudge $PWD" >> ${canary}; tr a-z A-Z`);
  const clean = script('clean.sh', `echo "clean $PWD" >> ${canary}; cat`);
  const textconv = script('textconv.sh', `echo textconv >> ${canary}; cat "$1"`);
  const driver = script('merge.sh', `echo merge >> ${canary}; exit 0`);
  script('hooks/post-checkout', `echo hook >> ${canary}`);
  writeFileSync(
    path.join(home, '.gitconfig'),
    [
      '[user]\n\tname = Test Person\n\temail = person@example.test',
      `[filter "evil"]\n\tsmudge = ${smudge}\n\tclean = ${clean}\n\trequired = true`,
      `[diff "evil"]\n\ttextconv = ${textconv}`,
      `[merge "evil"]\n\tdriver = ${driver} %O %A %B`,
      `[core]\n\thooksPath = ${path.join(home, 'hooks')}`,
      '',
    ].join('\n'),
  );
  vi.stubEnv('HOME', home);
  vi.stubEnv('XDG_CONFIG_HOME', path.join(home, '.config'));
  onTestFinished(() => {
    vi.unstubAllEnvs();
  });
  return {
    home,
    canary: () => (existsSync(canary) ? readFileSync(canary, 'utf8') : ''),
    clear: () => rmSync(canary, { force: true }),
    git: (cwd, ...args) =>
      execFileSync('git', args, {
        cwd,
        encoding: 'utf8',
        env: { ...baseEnvironment(), HOME: home, XDG_CONFIG_HOME: path.join(home, '.config') },
      }),
  };
}

/** A repository whose branch `task` adds `.gitattributes` naming `attributes` for every path, and a file. */
async function repoWithAttributes(attributes: string): Promise<TempRepo> {
  const repo = await createTempRepo({ 'README.md': '# demo\n' });
  runGit(repo.root, ['checkout', '-q', '-b', 'task']);
  await repo.commit('attributes', { '.gitattributes': `* ${attributes}\n`, 'greeting.txt': 'hello\n' });
  runGit(repo.root, ['checkout', '-q', 'main']);
  return repo;
}

/** A fresh directory for a checkout, removed at the end of the test. */
async function scratchDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ar-hostgit-scratch-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return path.join(dir, 'checkout');
}

describe('the settings of every host git call', () => {
  it('finds each configured filter and merge driver, names with dots included', () => {
    const listed = [
      'filter.lfs.smudge',
      'filter.lfs.process',
      'filter.lfs.required',
      'filter.a.b.clean',
      'merge.ours.driver',
      'merge.ours.name',
      'merge.renames',
      'filter.broken',
      '',
    ].join('\0');
    expect(configuredPrograms(listed)).toEqual({ filters: ['lfs', 'a.b'], mergeDrivers: ['ours'] });
  });

  it('adds the no-diff-program options to every diff-printing subcommand, and only there', () => {
    expect(withoutDiffPrograms(['diff', '--stat', 'a..b'])).toEqual([
      'diff',
      ...NO_DIFF_PROGRAMS,
      '--stat',
      'a..b',
    ]);
    expect(withoutDiffPrograms(['-C', '/x', 'log', '-1'])).toEqual([
      '-C',
      '/x',
      'log',
      ...NO_DIFF_PROGRAMS,
      '-1',
    ]);
    expect(withoutDiffPrograms(['show', '-s'])).toEqual(['show', ...NO_DIFF_PROGRAMS, '-s']);
    expect(withoutDiffPrograms(['rev-parse', 'diff'])).toEqual(['rev-parse', 'diff']);
  });

  it('looks the configured programs up for every call that may apply attributes', () => {
    expect(mayApplyAttributes(['rev-parse', 'HEAD'])).toBe(false);
    expect(mayApplyAttributes(['cat-file', 'commit', 'HEAD'])).toBe(false);
    expect(mayApplyAttributes(['cat-file', '--filters', 'HEAD:a'])).toBe(true);
    expect(mayApplyAttributes(['cat-file', '--textconv', 'HEAD:a'])).toBe(true);
    for (const subcommand of [
      'checkout',
      'merge',
      'worktree',
      'status',
      'diff',
      'reset',
      'read-tree',
      'fetch',
    ])
      expect(mayApplyAttributes(['-C', '/x', subcommand])).toBe(true);
  });
});

describe("host git against the person's own programs, named by worker-written attributes", () => {
  it('a checkout (worktree add) runs no smudge filter and writes the content as committed', async () => {
    const repo = await repoWithAttributes('filter=evil');
    const person = await personWithPrograms();
    const scratch = await scratchDir();
    person.git(path.dirname(scratch), 'clone', '-q', '-b', 'task', repo.root, scratch);
    // The attack works under plain git: the person's filter ran and changed the content.
    expect(person.canary()).toContain(`smudge ${scratch}`);
    expect(await readFile(path.join(scratch, 'greeting.txt'), 'utf8')).toBe('HELLO\n');
    person.clear();

    const worktree = await scratchDir();
    await git(['worktree', 'add', '-q', worktree, 'task'], { cwd: repo.root });
    expect(person.canary()).toBe('');
    expect(await readFile(path.join(worktree, 'greeting.txt'), 'utf8')).toBe('hello\n');
  });

  it('a status over changed files runs no clean filter', async () => {
    const repo = await repoWithAttributes('filter=evil');
    const worktree = await scratchDir();
    setupGit(repo.root, 'worktree', 'add', '-q', worktree, 'task');
    await writeFile(path.join(worktree, 'greeting.txt'), 'hello, changed\n');
    const person = await personWithPrograms();
    person.git(worktree, 'status', '--porcelain');
    expect(person.canary()).toContain(`clean ${worktree}`);
    person.clear();

    const status = await tryGit(['status', '--porcelain'], { cwd: worktree });
    expect(status.stdout).toContain('greeting.txt');
    expect(person.canary()).toBe('');
  });

  it('a diff of worker commits runs no textconv (stat, numstat and patch alike)', async () => {
    const repo = await createTempRepo({ '.gitattributes': '* diff=evil\n', 'greeting.txt': 'hello\n' });
    const before = runGit(repo.root, ['rev-parse', 'HEAD']).trim();
    const after = await repo.commit('change', { 'greeting.txt': 'hello again\n' });
    const person = await personWithPrograms();
    person.git(repo.root, 'diff', before, after);
    expect(person.canary()).toContain('textconv');
    person.clear();

    const patch = await git(['diff', '--no-color', before, after], { cwd: repo.root });
    await git(['diff', '--stat=100', before, after], { cwd: repo.root });
    await git(['diff', '--numstat', before, after], { cwd: repo.root });
    expect(patch).toContain('+hello again');
    expect(person.canary()).toBe('');
  });

  it('a three-way merge runs no merge driver: the path conflicts instead', async () => {
    const repo = await createTempRepo({ '.gitattributes': '* merge=evil\n', 'list.txt': 'a\nb\nc\nd\ne\n' });
    runGit(repo.root, ['checkout', '-q', '-b', 'other']);
    await repo.commit('other', { 'list.txt': 'a\nb\nc\nd\nE\n' });
    runGit(repo.root, ['checkout', '-q', 'main']);
    await repo.commit('mine', { 'list.txt': 'A\nb\nc\nd\ne\n' });
    const plain = await scratchDir();
    const ours = await scratchDir();
    setupGit(repo.root, 'worktree', 'add', '-q', '--detach', plain, 'main');
    setupGit(repo.root, 'worktree', 'add', '-q', '--detach', ours, 'main');
    const person = await personWithPrograms();
    person.git(plain, 'merge', '-q', '--no-edit', 'other');
    expect(person.canary()).toContain('merge');
    person.clear();

    const merged = await tryGit(['merge', '-q', '--no-edit', 'other'], { cwd: ours });
    expect(merged.exitCode).not.toBe(0);
    const conflicted = await git(['diff', '--name-only', '--diff-filter=U'], { cwd: ours });
    expect(conflicted.trim()).toBe('list.txt');
    expect(person.canary()).toBe('');
  });

  it("runs none of the person's hooks", async () => {
    const repo = await createTempRepo({ 'README.md': '# demo\n' });
    const person = await personWithPrograms();
    person.git(repo.root, 'checkout', '-q', '-b', 'plain');
    expect(person.canary()).toContain('hook');
    person.clear();

    await git(['checkout', '-q', '-b', 'ours'], { cwd: repo.root });
    expect(person.canary()).toBe('');
  });

  it('checks links out as plain files holding the target', async () => {
    const repo = await createTempRepo({ 'README.md': '# demo\n' });
    runGit(repo.root, ['checkout', '-q', '-b', 'task']);
    execFileSync('ln', ['-s', '/etc/hostname', path.join(repo.root, 'link')]);
    await repo.commit('a link out of the repository');
    runGit(repo.root, ['checkout', '-q', 'main']);
    const plain = await scratchDir();
    setupGit(repo.root, 'worktree', 'add', '-q', '--detach', plain, 'task');
    expect(lstatSync(path.join(plain, 'link')).isSymbolicLink()).toBe(true);

    const worktree = await scratchDir();
    await git(['worktree', 'add', '-q', '--detach', worktree, 'task'], { cwd: repo.root });
    expect(lstatSync(path.join(worktree, 'link')).isFile()).toBe(true);
    expect(await readFile(path.join(worktree, 'link'), 'utf8')).toBe('/etc/hostname');
  });

  it("syncBack fast-forwards the person's worktree without the person's filter", async () => {
    const repo = await createTempRepo({ 'README.md': '# demo\n' });
    const scope = { exclude: [...DEFAULT_EXCLUDE], read: [], write: [] };
    const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'HG-1', scope });
    // The worker: attributes naming the person's filter, and a file.
    await writeFile(path.join(prepared.sandboxRepoPath, '.gitattributes'), '* filter=evil\n');
    await writeFile(path.join(prepared.sandboxRepoPath, 'greeting.txt'), 'hello\n');
    setupGit(prepared.sandboxRepoPath, '-c', 'safe.directory=*', 'add', '-A');
    setupGit(prepared.sandboxRepoPath, '-c', 'safe.directory=*', 'commit', '-q', '-m', 'attributes');
    const person = await personWithPrograms();

    const synced = await syncBack({ repoRoot: repo.root, taskId: 'HG-1', scope });
    const ranDuringSync = person.canary();

    // The commit brought back, under plain git as the person would check it out: the filter runs.
    const scratch = await scratchDir();
    person.git(path.dirname(scratch), 'clone', '-q', '-b', 'agent-runner/HG-1', repo.root, scratch);
    expect(person.canary()).toContain(`smudge ${scratch}`);
    // agent-runner's fast-forward of the worktree ran nothing, and wrote the content as committed.
    expect(synced.worktreeUpdated).toBe(true);
    expect(ranDuringSync).toBe('');
    expect(await readFile(path.join(prepared.worktreePath, 'greeting.txt'), 'utf8')).toBe('hello\n');
  }, 30_000);
});

/** Processes whose command line mentions `needle` (Linux /proc). */
function processesMentioning(needle: string): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return cmdline.includes(needle) ? [`${pid}: ${cmdline}`] : [];
      } catch {
        return [];
      }
    });
}

/** A repository whose `packed-refs` is a FIFO: git blocks opening it. */
async function repoWithFifoRefs(): Promise<string> {
  const repo = await createTempRepo({ 'README.md': '# demo\n' });
  execFileSync('mkfifo', [path.join(repo.root, '.git', 'packed-refs')]);
  return repo.root;
}

describe('the time limit of a host git call', () => {
  it('stops a git blocked on a FIFO, with the upload-pack it started, and says so', async () => {
    const blocked = await repoWithFifoRefs();
    const receiver = await createTempRepo({ 'README.md': '# receiver\n' });
    const fetchArgs = ['fetch', '-q', path.join(blocked, '.git'), '+refs/heads/main:refs/probe'];
    // The attack: plain git waits on the FIFO for as long as nobody writes to it.
    const plain = spawn('git', fetchArgs, { cwd: receiver.root, detached: true, stdio: 'ignore' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(plain.exitCode).toBeNull();
    expect(processesMentioning(blocked).length).toBeGreaterThan(0);
    process.kill(-(plain.pid as number), 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 200));

    const started = Date.now();
    const error = await tryGit(fetchArgs, { cwd: receiver.root, timeoutMs: 1000 }).catch((caught) => caught);
    expect(error).toBeInstanceOf(AgentRunnerError);
    expect((error as AgentRunnerError).code).toBe('workspace_failed');
    expect((error as AgentRunnerError).message).toMatch(
      /git fetch .* did not finish within 1 s and was stopped/,
    );
    expect((error as AgentRunnerError).details).toMatchObject({ timedOut: true, timeoutMs: 1000 });
    expect(Date.now() - started).toBeLessThan(8000);
    expect(processesMentioning(blocked)).toEqual([]);
  }, 30_000);
});
