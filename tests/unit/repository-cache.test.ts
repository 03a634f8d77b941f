/**
 * The cache of `run --repo`: its naming, fetch-not-clone, the base (default branch or --base), the errors, and
 * concurrent tasks on one URL under the lock. Real git against file:// remotes and a real HTTP remote.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  cacheDirectory,
  cacheName,
  listCachedRepositories,
  prepareRepositoryCache,
  readCachedRemote,
} from '../../src/remote/repository-cache.js';
import { namedForge, parseRemoteUrl } from '../../src/remote/remote-url.js';
import { AgentRunnerError } from '../../src/errors.js';
import { commandRepositories, taskRepository } from '../../src/cli/command-repositories.js';
import { GitHttpRemote } from '../support/git-http-remote.js';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@e', ...args], {
    cwd,
    encoding: 'utf8',
  });
}

function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A bare remote with `main` (default) and `dev`, and the work tree it was pushed from. */
function bareRemote(): { bare: string; work: string; url: string } {
  const root = tempDir('ar-cache-remote-');
  const work = path.join(root, 'work');
  const bare = path.join(root, 'app.git');
  execFileSync('git', ['init', '-q', '-b', 'main', work]);
  writeFileSync(path.join(work, 'README.md'), 'one\n');
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'one');
  git(work, 'branch', 'dev');
  execFileSync('git', ['clone', '-q', '--bare', work, bare]);
  return { bare, work, url: `file://${bare}` };
}

function stateEnv(): NodeJS.ProcessEnv {
  return { ...process.env, XDG_STATE_HOME: tempDir('ar-cache-state-') };
}

async function refused(work: Promise<unknown>): Promise<AgentRunnerError> {
  const error = await work.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AgentRunnerError);
  return error as AgentRunnerError;
}

describe('repository cache', () => {
  it('names a cache by a readable slug and a hash of the credential-free URL', () => {
    const name = (raw: string) => cacheName(parseRemoteUrl(raw)!);
    expect(name('https://github.com/acme/app.git')).toMatch(/^acme-app-[0-9a-f]{10}$/);
    // Credentials do not change which cache a URL uses, and never appear in its name.
    expect(name('https://bot:s3cretToken@github.com/acme/app.git')).toBe(
      name('https://github.com/acme/app.git'),
    );
    expect(name('https://bot:s3cretToken@github.com/acme/app.git')).not.toContain('s3cret');
    expect(name('https://gitlab.com/acme/app.git')).not.toBe(name('https://github.com/acme/app.git'));
    expect(name('git@github.com:acme/app.git')).toMatch(/^acme-app-/);
    expect(name('file:///srv/git/x%20y/app.git')).toMatch(/^x-y-app-/);
    const env = { XDG_STATE_HOME: '/state' };
    expect(cacheDirectory(env, 'https://github.com/acme/app')).toBe(
      path.join('/state/agent-runner/repos', name('https://github.com/acme/app')),
    );
  });

  it('clones once, then fetches: the object directory survives and new commits arrive', async () => {
    const remote = bareRemote();
    const env = stateEnv();
    const first = await prepareRepositoryCache({ url: remote.url, env });
    expect(first.how).toBe('cloned');
    expect(first.baseBranch).toBe('main');
    expect(first.baseSha).toBe(git(remote.work, 'rev-parse', 'main').trim());
    expect(await readCachedRemote(first.root)).toBe(remote.url);
    expect(git(first.root, 'config', 'remote.origin.url').trim()).toBe(remote.url);
    const marker = path.join(first.root, '.git', 'objects', 'marker');
    writeFileSync(marker, 'kept');
    const inode = statSync(path.join(first.root, '.git')).ino;

    writeFileSync(path.join(remote.work, 'README.md'), 'two\n');
    git(remote.work, 'commit', '-q', '-am', 'two');
    git(remote.work, 'push', '-q', remote.bare, 'main');
    const second = await prepareRepositoryCache({ url: remote.url, env });
    expect(second.how).toBe('fetched');
    expect(second.root).toBe(first.root);
    expect(second.baseSha).toBe(git(remote.work, 'rev-parse', 'main').trim());
    expect(readFileSync(path.join(second.root, 'README.md'), 'utf8')).toBe('two\n');
    expect(readFileSync(marker, 'utf8')).toBe('kept');
    expect(statSync(path.join(first.root, '.git')).ino).toBe(inode);
    expect(await listCachedRepositories(env)).toEqual([{ root: first.root, url: remote.url }]);

    const dev = await prepareRepositoryCache({ url: remote.url, base: 'dev', env });
    expect(dev.baseSha).toBe(git(remote.work, 'rev-parse', 'dev').trim());
    expect(readFileSync(path.join(dev.root, 'README.md'), 'utf8')).toBe('one\n');
  });

  it('refuses a --base the remote does not have, naming its branches, and keeps the cache', async () => {
    const remote = bareRemote();
    const env = stateEnv();
    await prepareRepositoryCache({ url: remote.url, env });
    const error = await refused(prepareRepositoryCache({ url: remote.url, base: 'nope', env }));
    expect(error.code).toBe('remote_failed');
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe(
      `--base nope is not a branch of ${remote.url}. Its branches: dev, main. Give one of them with --base, or omit --base for its default branch.`,
    );
    expect(await readCachedRemote(cacheDirectory(env, remote.url))).toBe(remote.url);
  });

  it('an unreachable remote fails with its message and leaves no cache behind', async () => {
    const env = stateEnv();
    const url = `file://${tempDir('ar-cache-none-')}/missing.git`;
    const error = await refused(prepareRepositoryCache({ url, env }));
    expect(error.code).toBe('remote_failed');
    expect(error.exitCode).toBe(4);
    expect(error.message).toMatch(
      /^Could not reach file:\/\/.*missing\.git \(.*\)\. Check the URL and the network/,
    );
    expect(existsSync(cacheDirectory(env, url))).toBe(false);
  });

  it('over HTTP: a wrong password is refused as such; the right one in the URL is used but stored nowhere', async () => {
    const server = await new GitHttpRemote().start();
    onTestFinished(() => server.stop());
    const source = bareRemote();
    execFileSync('git', ['clone', '-q', '--bare', source.work, path.join(server.root, 'app.git')]);
    const env = stateEnv();
    const base = server.url('app');
    const withPassword = (password: string) =>
      base.replace('://', `://${encodeURIComponent(server.user)}:${encodeURIComponent(password)}@`);

    const wrong = await refused(prepareRepositoryCache({ url: withPassword('wrong-password-123'), env }));
    expect(wrong.code).toBe('remote_failed');
    expect(wrong.exitCode).toBe(2);
    expect(wrong.message).toMatch(/refused the credentials/);
    expect(wrong.message).not.toContain('wrong-password-123');
    expect(existsSync(cacheDirectory(env, base))).toBe(false);

    const cached = await prepareRepositoryCache({ url: withPassword(server.password), env });
    expect(cached.url).toBe(base);
    expect(cached.secrets).toContain(server.password);
    expect(server.requests.some((request) => request.authorized)).toBe(true);
    // The probe can see the password where it is planted, and finds it nowhere in the cache.
    const planted = path.join(tempDir('ar-cache-probe-'), 'config');
    writeFileSync(planted, withPassword(server.password));
    expect(filesContaining(path.dirname(planted), server.password)).toEqual([planted]);
    expect(filesContaining(cached.root, server.password)).toEqual([]);
    expect(git(cached.root, 'config', 'remote.origin.url').trim()).toBe(base);
  });

  it('a self-hosted forge named before the clone (--forge / AGENT_RUNNER_FORGE): its token answers the clone', async () => {
    const token = 'glpat-selfHostedToken0123456789';
    const server = await new GitHttpRemote({ user: 'oauth2', password: token }).start();
    onTestFinished(() => server.stop());
    const source = bareRemote();
    execFileSync('git', ['clone', '-q', '--bare', source.work, path.join(server.root, 'app.git')]);
    const env = { ...stateEnv(), GITLAB_TOKEN: token };
    // The host (127.0.0.1) names no forge: without one, git has no credential and is refused.
    const unnamed = await refused(prepareRepositoryCache({ url: server.url('app'), env }));
    expect(unnamed.message).toMatch(/refused the credentials/);
    const cached = await prepareRepositoryCache({
      url: server.url('app'),
      env,
      forge: namedForge(undefined, { AGENT_RUNNER_FORGE: 'gitlab' }),
    });
    expect(cached.how).toBe('cloned');
    expect(cached.secrets).toContain(token);
    expect(server.requests.some((request) => request.authorized)).toBe(true);
    expect(filesContaining(cached.root, token)).toEqual([]);
    // The flag wins over the variable; anything but a forge is refused with the choices.
    expect(namedForge('github', { AGENT_RUNNER_FORGE: 'gitlab' })).toBe('github');
    expect(namedForge(undefined, { AGENT_RUNNER_FORGE: 'auto' })).toBeNull();
    expect(() => namedForge('gitea', {})).toThrow(/--forge "gitea" is no forge: give github/);
  });

  it('concurrent tasks on one URL wait for each other: one clone, the rest fetch, the cache stays sound', async () => {
    const remote = bareRemote();
    const env = stateEnv();
    const results = await Promise.all(
      [0, 1, 2, 3].map(() => prepareRepositoryCache({ url: remote.url, env })),
    );
    expect(results.map((result) => result.how).sort()).toEqual(['cloned', 'fetched', 'fetched', 'fetched']);
    const root = cacheDirectory(env, remote.url);
    expect(git(root, 'fsck', '--no-progress').trim()).toBe('');
    expect(existsSync(`${root}.lock`)).toBe(false);
  });
});

describe('commands outside any repository', () => {
  it('status, gc and resume find cached repositories: --repo names one, else all of them, resume by its task id', async () => {
    const env = stateEnv();
    const one = bareRemote();
    const two = bareRemote();
    const first = await prepareRepositoryCache({ url: one.url, env });
    const second = await prepareRepositoryCache({ url: two.url, env });
    mkdirSync(path.join(second.root, '.agent-runner', 'runs', 'task-b'), { recursive: true });
    const context = { cwd: tempDir('ar-cache-cwd-'), env };
    const all = await commandRepositories(undefined, context);
    expect(all.map((entry) => entry.url).sort()).toEqual([one.url, two.url].sort());
    expect(await commandRepositories(one.url, context)).toEqual([{ root: first.root, url: one.url }]);
    expect(await taskRepository('task-b', undefined, context)).toEqual({ root: second.root, url: two.url });
    const missing = await refused(taskRepository('task-z', undefined, context));
    expect(missing.code).toBe('task_not_found');
    const unknown = await refused(commandRepositories('https://example.com/none.git', context));
    expect(unknown.message).toMatch(/^No task has run on https:\/\/example\.com\/none\.git on this machine/);
    // Inside a repository, its own tasks as always.
    expect(await commandRepositories(undefined, { cwd: one.work, env })).toEqual([
      { root: one.work, url: null },
    ]);
  });
});

function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (readFileSync(file).includes(needle)) found.push(file);
  }
  return found;
}
