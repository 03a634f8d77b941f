/**
 * `run --repo URL` end to end (real CLI, real git over HTTP and file://, real Docker, the real codex binary; only
 * the models are scripted), from a directory that is not a git repository: the task completes in the remote's
 * cached clone, the note is where the output says, a second task fetches instead of cloning, git's credential
 * helper supplies the password and it shows up nowhere, and an unreachable remote or a wrong password each end
 * with their message and exit code and no container.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { cacheDirectory } from '../../src/remote/repository-cache.js';
import { runCliCaptured } from '../support/cli.js';
import { GitHttpRemote } from '../support/git-http-remote.js';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';
import { ScriptedGitLabServer } from '../support/scripted-gitlab-server.js';
import { assessmentReply, decisionReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { commitSlugTurn, jsonSummary, scriptedRunEnv } from '../support/demo-task.js';
import { createNodeRepo, git } from '../support/task-repo.js';

const docker = createDockerClient();
const models = scriptedModelServers();
const FILE_STARTED = Math.floor(Date.now() / 1000) - 1;

function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Containers of this task id made since the file started, running or not (the cache may not exist). */
async function containersOf(taskId: string): Promise<string[]> {
  const all = await docker.listContainers({ all: true, filters: { label: [`agent-runner.task=${taskId}`] } });
  return all.filter((container) => container.Created >= FILE_STARTED).map((container) => container.Id);
}

function completingTask(id: string): void {
  models.chat.push(
    { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works, with a test', critical: true }]) },
    { reply: runWorkerReply('Implement slugify with a test and commit.') },
    { reply: assessmentReply(true, ['AC-1'], 'slugify and its test are committed; npm test passes.') },
  );
  models.responses.enqueue(...commitSlugTurn());
}

/** A directory with only the PRD in it (no git), a state directory, and the environment of a run. */
function outsideAnyRepository(extra: NodeJS.ProcessEnv = {}): { cwd: string; env: NodeJS.ProcessEnv } {
  const cwd = tempDir('ar-remote-cwd-');
  writeFileSync(
    path.join(cwd, 'PRD.md'),
    '# Add slugify\n\nAdd `slugify(text)` in slug.js: lower-case, words joined by "-". With a test.\n',
  );
  const env = scriptedRunEnv(models, 'e2e-remote-key', {
    XDG_STATE_HOME: tempDir('ar-remote-state-'),
    ...extra,
  });
  return { cwd, env };
}

async function runRemote(url: string, taskId: string, where: { cwd: string; env: NodeJS.ProcessEnv }) {
  onTestFinished(async () => expect(await containersOf(taskId)).toEqual([]));
  const result = await runCliCaptured(
    ['run', '--repo', url, '--prd', 'PRD.md', '--task-id', taskId, '--json'],
    where,
  );
  const summary = jsonSummary<{
    state: string;
    exitCode: number;
    notePath: string;
    branch: string;
    repository: string;
    cache: string;
    runDir: string;
  }>(result.stdout);
  return { result, summary };
}

/** An HTTP remote that takes `user` and `token`, its `acme/app` holding the Node task repository. */
async function acmeRemote(user: string, token: string): Promise<GitHttpRemote> {
  const server = await new GitHttpRemote({ user, password: token }).start();
  onTestFinished(() => server.stop());
  const source = createNodeRepo();
  onTestFinished(source.remove);
  await server.createFrom('acme/app', source.root);
  return server;
}

/** Every file under `dir` whose bytes contain `needle`. */
function filesContaining(dir: string, needle: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => readFileSync(file).includes(needle));
}

describe('run --repo (end to end)', () => {
  it('over HTTP with git credential helper: COMPLETE in the cache, then a second task fetches; the password shows nowhere', async () => {
    const server = await new GitHttpRemote().start();
    onTestFinished(() => server.stop());
    const source = createNodeRepo();
    onTestFinished(source.remove);
    await server.createFrom('app', source.root);
    const url = server.url('app');
    // git's own credential store, in a config home of the test's: the only place the password is.
    const configHome = tempDir('ar-remote-xdg-');
    mkdirSync(path.join(configHome, 'git'));
    writeFileSync(path.join(configHome, 'git', 'config'), '[credential]\n\thelper = store\n');
    const stored = path.join(configHome, 'git', 'credentials');
    writeFileSync(
      stored,
      `${url.replace('://', `://${server.user}:${server.password}@`).replace(/\/app\.git$/, '')}\n`,
    );
    const where = outsideAnyRepository({ XDG_CONFIG_HOME: configHome });

    completingTask('remote-http-1');
    const first = await runRemote(url, 'remote-http-1', where);
    expect(first.result.stderr).toContain(`agent-runner: cloned ${url} (main at `);
    expect(first.summary.state).toBe('COMPLETE');
    expect(first.result.exitCode).toBe(0);
    const cache = cacheDirectory(where.env, url);
    expect(first.summary.cache).toBe(cache);
    expect(first.summary.repository).toBe(url);
    expect(first.summary.notePath).toBe(path.join(cache, '.agent-runner', 'task-remote-http-1.md'));
    expect(first.summary.runDir).toBe(path.join(cache, '.agent-runner', 'runs', 'remote-http-1'));
    const note = readFileSync(first.summary.notePath, 'utf8');
    expect(note).toContain(`| Repository | \`${url}\` |`);
    expect(git(cache, 'log', '-1', '--format=%s', 'agent-runner/remote-http-1')).toBe('Add slugify');
    expect(git(cache, 'config', 'remote.origin.url')).toBe(url);
    expect(server.requests.some((request) => request.authorized)).toBe(true);

    // The second task on the same URL fetches into the same object directory.
    const marker = path.join(cache, '.git', 'objects', 'kept-by-fetch');
    writeFileSync(marker, 'x');
    const requestsBefore = server.requests.length;
    models.chat.push(
      { reply: planReply('remote-http-2', [{ id: 'AC-1', description: 'nothing', critical: true }]) },
      { reply: decisionReply('abort', 'Stopping here: the cache was what this run had to show.') },
    );
    const second = await runRemote(url, 'remote-http-2', where);
    expect(second.result.stderr).toContain(`agent-runner: fetched ${url} (main at `);
    expect(second.summary.state).toBe('FAILED');
    expect(existsSync(marker)).toBe(true);
    expect(second.summary.cache).toBe(cache);
    // Two calls of the remote: the default branch (ls-remote) and one fetch, no clone of the whole again.
    const uploads = server.requests.slice(requestsBefore).filter((request) => request.method === 'POST');
    expect(uploads.length).toBeLessThanOrEqual(3);

    // The probe sees the password where it was planted, then finds it in no output, journal, note or cache file.
    expect(filesContaining(configHome, server.password)).toEqual([stored]);
    for (const run of [first, second]) {
      expect(run.result.stdout).not.toContain(server.password);
      expect(run.result.stderr).not.toContain(server.password);
    }
    expect(filesContaining(cache, server.password)).toEqual([]);
    expect(filesContaining(where.env.XDG_STATE_HOME as string, server.password)).toEqual([]);
  });

  it('a file:// remote: COMPLETE, the task branch in the cache, the note where the output says', async () => {
    const source = createNodeRepo();
    onTestFinished(source.remove);
    // A memory bank entry committed on the remote reaches the worker (the cache's base commit is read).
    const entryText = `REMOTE-ENTRY-${FILE_STARTED}: errors are JSON.`;
    mkdirSync(path.join(source.root, '.agent-runner', 'memory'), { recursive: true });
    writeFileSync(
      path.join(source.root, '.agent-runner/memory/0001-json-errors.md'),
      `---\ntitle: JSON errors\nstatus: active\nsource: person\ncreated: 2026-11-01T00:00:00Z\n---\n\n${entryText}\n`,
    );
    git(source.root, 'add', '-f', '.agent-runner/memory/0001-json-errors.md');
    git(source.root, '-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-q', '-m', 'Memory bank');
    const bare = path.join(tempDir('ar-remote-bare-'), 'app.git');
    execFileSync('git', ['clone', '-q', '--bare', source.root, bare]);
    const url = `file://${bare}`;
    const where = outsideAnyRepository();
    completingTask('remote-file-1');
    const { result, summary } = await runRemote(url, 'remote-file-1', where);
    expect(summary.state, `${result.stderr}\n${JSON.stringify(summary)}`).toBe('COMPLETE');
    expect(result.exitCode).toBe(0);
    expect(existsSync(summary.notePath)).toBe(true);
    expect(summary.notePath.startsWith(summary.cache)).toBe(true);
    const workerRequest = models.responses
      .responseRequests()
      .map((seen) => JSON.stringify(seen.body))
      .find((body) => body.includes('remote-file-1'));
    expect(workerRequest).toContain(entryText);
    expect(workerRequest).toContain('.agent-runner/memory/0001-json-errors.md');
    expect(git(summary.cache, 'rev-parse', '--verify', 'refs/heads/agent-runner/remote-file-1')).toMatch(
      /^[0-9a-f]{40}$/,
    );
    // The person's directory stays as it was: only the PRD.
    expect(readdirSync(where.cwd)).toEqual(['PRD.md']);
    // `status` from that directory (in no repository) lists the cached remote's task, named by its URL.
    const status = await runCliCaptured(['status', '--json'], where);
    expect(status.exitCode).toBe(0);
    const listed = (JSON.parse(status.stdout) as { tasks: { taskId: string; repository?: string }[] }).tasks;
    expect(listed).toContainEqual(expect.objectContaining({ taskId: 'remote-file-1', repository: url }));
    const byRepo = await runCliCaptured(['status', '--repo', url], where);
    expect(byRepo.stdout).toContain(`${url} (${summary.cache})`);
    expect(byRepo.stdout).toContain('remote-file-1');
  });

  it('an unreachable remote and a wrong password: each its message and exit code, no cache, no container', async () => {
    const where = outsideAnyRepository();
    const unreachable = 'http://127.0.0.1:9/nowhere.git';
    const gone = await runCliCaptured(
      ['run', '--repo', unreachable, '--prd', 'PRD.md', '--task-id', 'remote-unreachable'],
      where,
    );
    expect(gone.exitCode).toBe(4);
    expect(gone.stderr).toMatch(
      /Could not reach http:\/\/127\.0\.0\.1:9\/nowhere\.git \(.*\)\. Check the URL/,
    );
    expect(existsSync(cacheDirectory(where.env, unreachable))).toBe(false);
    expect(await containersOf('remote-unreachable')).toEqual([]);

    const server = await new GitHttpRemote().start();
    onTestFinished(() => server.stop());
    const source = createNodeRepo();
    onTestFinished(source.remove);
    await server.createFrom('app', source.root);
    const wrong = 'wrong-password-0123456789';
    const url = server.url('app').replace('://', `://${server.user}:${wrong}@`);
    const refused = await runCliCaptured(
      ['run', '--repo', url, '--prd', 'PRD.md', '--task-id', 'remote-refused'],
      where,
    );
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain(`${server.url('app')} refused the credentials`);
    expect(refused.stderr + refused.stdout).not.toContain(wrong);
    expect(existsSync(cacheDirectory(where.env, url))).toBe(false);
    expect(await containersOf('remote-refused')).toEqual([]);
  });
  it('--repo with --pr: no checkout, the token in the URL for the clone and GH_TOKEN for the push, one pull request with the evidence', async () => {
    const token = 'ghp_e2eRemoteRepoToken0123456789abcdefAB';
    const server = await acmeRemote('x-access-token', token);
    const github = await new ScriptedGitHubServer().start();
    onTestFinished(() => github.stop());
    const where = outsideAnyRepository({ GH_TOKEN: token });
    const config = path.join(where.cwd, 'agent-runner.yaml');
    writeFileSync(config, `deliver:\n  forge: github\n  apiUrl: ${github.url}\n`);
    completingTask('e2e-remote-pr');
    const result = await runCliCaptured(
      [
        'run',
        '--repo',
        server.url('acme/app').replace('http://', `http://x-access-token:${token}@`),
        '--prd',
        'PRD.md',
        '--task-id',
        'e2e-remote-pr',
        '--json',
        '--pr',
        '--config',
        config,
      ],
      where,
    );
    onTestFinished(async () => expect(await containersOf('e2e-remote-pr')).toEqual([]));
    const summary = jsonSummary<{
      state: string;
      headSha: string;
      cache: string;
      delivery: { pushed: boolean; url: string | null };
    }>(result.stdout);
    expect(summary.state, result.stderr).toBe('COMPLETE');
    expect(summary.delivery).toMatchObject({ pushed: true, url: 'https://github.test/acme/app/pull/1' });
    expect(await server.ref('acme/app', 'agent-runner/e2e-remote-pr')).toBe(summary.headSha);
    expect((github.pulls.get(1) as { body: string }).body).toContain('## Acceptance criteria');
    expect(`${result.stdout}${result.stderr}`).not.toContain(token);
    expect(filesContaining(summary.cache, token)).toEqual([]);
    github.assertValid();
  });

  it('a self-hosted GitLab named with --forge and AGENT_RUNNER_FORGE_API_URL: GITLAB_TOKEN clones, pushes and opens the merge request, no config file', async () => {
    const token = 'glpat-e2eSelfHostedToken0123456789';
    const server = await acmeRemote('oauth2', token);
    const gitlab = await new ScriptedGitLabServer().start();
    onTestFinished(() => gitlab.stop());
    // 127.0.0.1 names no forge: only --forge makes GITLAB_TOKEN the clone's credential.
    const where = outsideAnyRepository({ GITLAB_TOKEN: token, AGENT_RUNNER_FORGE_API_URL: gitlab.url });
    const id = 'e2e-remote-gitlab';
    onTestFinished(async () => expect(await containersOf(id)).toEqual([]));
    completingTask(id);
    const argv = [
      'run',
      '--repo',
      server.url('acme/app'),
      '--prd',
      'PRD.md',
      '--task-id',
      id,
      '--json',
      '--pr',
    ];
    const result = await runCliCaptured([...argv, '--forge', 'gitlab'], where);
    const summary = jsonSummary<{
      state: string;
      headSha: string;
      cache: string;
      delivery: { pushed: boolean; url: string | null; error: unknown };
    }>(result.stdout);
    expect(summary.state, result.stderr).toBe('COMPLETE');
    expect(summary.delivery).toMatchObject({
      pushed: true,
      error: null,
      url: 'https://gitlab.test/acme/app/-/merge_requests/1',
    });
    expect(await server.ref('acme/app', `agent-runner/${id}`)).toBe(summary.headSha);
    const request = gitlab.mergeRequests.get(1) as { title: string; description: string };
    expect(request.title).toBe('Add slugify');
    expect(request.description).toContain('## Acceptance criteria');
    expect(gitlab.calls.every((call) => call.token === token)).toBe(true);
    expect(`${result.stdout}${result.stderr}`).not.toContain(token);
    expect(filesContaining(summary.cache, token)).toEqual([]);
    gitlab.assertValid();
  });
});
