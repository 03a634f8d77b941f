/**
 * What host git reads of the sandbox repository is checked before it fetches (real git, no Docker): special
 * files and links where upload-pack reads, a config that includes other files, and a `.git` planted inside the
 * git directory to redirect upload-pack. Each attack is first shown to work on plain git.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DEFAULT_EXCLUDE } from '../../src/config/schema.js';
import { prepareTaskWorkspace } from '../../src/workspace/prepare-task-workspace.js';
import { sandboxReadProblem, withoutControls } from '../../src/workspace/sandbox-repo/sandbox-git-files.js';
import type { Scope } from '../../src/workspace/scope/scope.js';
import { syncBack } from '../../src/workspace/sandbox-repo/sync-back.js';
import { createTempRepo, runGit } from '../support/git-repo.js';

const SCOPE: Scope = { exclude: [...DEFAULT_EXCLUDE], read: [], write: [] };

/** Acts as the worker on the host (tests only): git in the sandbox repository, whoever owns it. */
function worker(sandboxRepoPath: string, ...args: string[]): string {
  return runGit(sandboxRepoPath, ['-c', 'safe.directory=*', ...args]);
}

/** A git directory with one commit, for the checks alone. */
async function gitDir(): Promise<string> {
  const repo = await createTempRepo({ 'README.md': '# demo\n' });
  return path.join(repo.root, '.git');
}

/**
 * Plain host git's environment for reading a repository someone else may own (the sandbox's files can belong
 * to the worker's uid): a system config trusting every directory, as upload-pack reads no `-c`.
 */
async function plainFetchEnvironment(): Promise<NodeJS.ProcessEnv> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ar-sandbox-files-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const system = path.join(dir, 'gitconfig');
  await writeFile(system, '[safe]\n\tdirectory = *\n');
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('GIT_')));
  return { ...env, GIT_CONFIG_SYSTEM: system };
}

/** A prepared task whose worker committed one file in the sandbox repository. */
async function taskWithWorkerCommit(taskId: string) {
  const repo = await createTempRepo({ 'README.md': '# demo\n' });
  const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId, scope: SCOPE });
  await writeFile(path.join(prepared.sandboxRepoPath, 'work.txt'), 'work\n');
  worker(prepared.sandboxRepoPath, 'add', '-A');
  worker(prepared.sandboxRepoPath, 'commit', '-q', '-m', 'the worker commit');
  return { repo, prepared, sandboxGit: path.join(prepared.sandboxRepoPath, '.git') };
}

describe('the entries host git reads in the sandbox .git', () => {
  it('accepts a plain git directory', async () => {
    expect(await sandboxReadProblem(await gitDir())).toBeNull();
  });

  it.each([
    ['packed-refs', 'packed-refs'],
    ['config', 'config'],
    ['shallow', 'shallow'],
    ['info/grafts', 'info/grafts'],
    ['a pack file', 'objects/pack/pack-planted.pack'],
    ['a loose ref', 'refs/heads/planted'],
  ])('refuses a FIFO at %s, naming it', async (_name, relative) => {
    const dir = await gitDir();
    execFileSync('rm', ['-f', path.join(dir, relative)]);
    mkdirSync(path.dirname(path.join(dir, relative)), { recursive: true });
    execFileSync('mkfifo', [path.join(dir, relative)]);
    expect(await sandboxReadProblem(dir)).toBe(`${relative} is a symlink or a special file (a FIFO)`);
  });

  it('refuses a symlink, and prints a planted name without its control characters', async () => {
    const dir = await gitDir();
    symlinkSync('/etc/hostname', path.join(dir, 'refs', 'heads', 'evil\u001b[2Jname'));
    expect(await sandboxReadProblem(dir)).toBe(
      'refs/heads/evil?[2Jname is a symlink or a special file (a symlink)',
    );
    expect(withoutControls('a\u0007b\u009bc')).toBe('a?b?c');
  });

  it.each([
    ['include', '[include]\n\tpath = '],
    ['includeIf', '[includeIf "gitdir:/"]\n\tpath = '],
    ['another spelling, after another section on its line', '[core][InClUdE]path = '],
  ])('refuses a config with %s, which git follows', async (_name, section) => {
    const dir = await gitDir();
    const included = path.join(dir, '..', 'included.gitconfig');
    writeFileSync(included, '[planted]\n\tvalue = read-by-git\n');
    writeFileSync(path.join(dir, 'config'), `[core]\n\trepositoryformatversion = 0\n${section}${included}\n`);
    // The attack: git reads whatever file the include names.
    expect(runGit(path.dirname(dir), ['config', 'planted.value']).trim()).toBe('read-by-git');
    expect(await sandboxReadProblem(dir)).toBe('config includes other configuration files');
  });
});

describe('fetchFromSandbox against a planted git directory', () => {
  it('refuses a FIFO at packed-refs at once, where plain git would wait forever', async () => {
    const { repo, prepared, sandboxGit } = await taskWithWorkerCommit('SG-1');
    execFileSync('mkfifo', [path.join(sandboxGit, 'packed-refs')]);
    const plain = spawn('git', ['fetch', '-q', sandboxGit, '+refs/heads/agent-runner/SG-1:refs/probe'], {
      cwd: repo.root,
      env: await plainFetchEnvironment(),
      detached: true,
      stdio: 'ignore',
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(plain.exitCode).toBeNull();
    process.kill(-(plain.pid as number), 'SIGKILL');

    const started = Date.now();
    const synced = await syncBack({ repoRoot: repo.root, taskId: 'SG-1', scope: SCOPE });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(synced.problem).toBe(
      `refusing to read ${sandboxGit}: packed-refs is a symlink or a special file (a FIFO)`,
    );
    expect(synced.commits).toEqual([]);
    expect(repo.git('rev-parse', 'agent-runner/SG-1').trim()).toBe(prepared.baseSha);
  }, 30_000);

  it('reads the sandbox .git itself, never a `.git` planted inside it that points elsewhere', async () => {
    const { repo, sandboxGit } = await taskWithWorkerCommit('SG-2');
    const decoy = await createTempRepo({ 'decoy.txt': 'decoy\n' });
    decoy.git('commit', '-q', '--allow-empty', '-m', 'the decoy commit');
    decoy.git('branch', 'agent-runner/SG-2');
    writeFileSync(path.join(sandboxGit, '.git'), `gitdir: ${path.join(decoy.root, '.git')}\n`);
    // The attack: plain upload-pack tries `<dir>/.git` first and follows the planted gitdir file.
    execFileSync('git', ['fetch', '-q', sandboxGit, '+refs/heads/agent-runner/SG-2:refs/probe'], {
      cwd: repo.root,
      env: await plainFetchEnvironment(),
    });
    expect(repo.git('log', '-1', '--format=%s', 'refs/probe').trim()).toBe('the decoy commit');

    const synced = await syncBack({ repoRoot: repo.root, taskId: 'SG-2', scope: SCOPE });
    expect(synced.problem).toBeNull();
    expect(synced.commits.map((commit) => commit.subject)).toEqual(['the worker commit']);
  }, 30_000);
});
