/**
 * A runner that is not root (a developer's usual account): read-only scope still holds physically. The CLI
 * runs as uid 1000 (with the docker group) on a repository that uid owns; the ownership of read-only files
 * is applied by the privileged helper container, the worker (also uid 1000, the repository's owner) tries to
 * change a read-only file and is refused by the kernel, and `gc` can still delete the sandbox afterwards.
 * Needs root to switch users (setpriv) and an account with uid 1000, as this kind of machine (and its CI) has.
 */
import { spawn, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { assistantMessage, commandCall } from '../support/scripted-responses-server.js';
import { SLUG_JS, SLUG_TEST_JS, createNodeRepo, git, writeFileCommand } from '../support/task-repo.js';
import { taskContainers } from '../support/task-containers.js';
import { cliArgs } from '../support/cli-bundle.js';

const USER = 1000;
const isRoot = process.getuid?.() === 0;
const dockerGroup = (() => {
  try {
    return execFileSync('getent', ['group', 'docker'], { encoding: 'utf8' }).split(':')[2] ?? '';
  } catch {
    return '';
  }
})();
const userExists = (() => {
  try {
    execFileSync('getent', ['passwd', String(USER)]);
    return true;
  } catch {
    return false;
  }
})();
const models = scriptedModelServers();

function chownTree(target: string): void {
  execFileSync('chown', ['-R', `${USER}:${USER}`, target]);
}

/** Runs the CLI as uid 1000 with the docker group. */
function runAsUser(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    'setpriv',
    [
      `--reuid=${USER}`,
      `--regid=${USER}`,
      `--groups=${dockerGroup}`,
      '--',
      process.execPath,
      ...cliArgs(args),
    ],
    { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

describe.skipIf(!isRoot || !dockerGroup || !userExists)('a runner that is not root', () => {
  it('keeps read-only paths read-only for the worker, and gc can still remove the sandbox', async () => {
    const id = 'E2E-NONROOT';
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    writeFileSync(path.join(repo.root, 'agent-runner.yaml'), 'scope:\n  read:\n    - README.md\n');
    git(repo.root, 'add', 'agent-runner.yaml');
    git(repo.root, 'commit', '-q', '-m', 'read-only README');
    chownTree(repo.root);
    const home = mkdtempSync(path.join(tmpdir(), 'ar-home-'));
    chownSync(home, USER, USER);
    onTestFinished(() => rmSync(home, { recursive: true, force: true }));
    onTestFinished(async () => {
      expect(await taskContainers(id, repo.root)).toEqual([]);
    });

    models.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify with a test and commit. Do not touch README.md.') },
      { reply: assessmentReply(true, ['AC-1'], 'slugify is committed; README.md untouched.') },
    );
    // The worker owns the repository's files on the host (it runs as their owner), yet cannot change
    // README.md: it belongs to the guard uid, without write bits, in a sticky directory.
    const attack =
      'echo changed >> README.md; echo "append=$?"; chmod u+w README.md; echo "chmod=$?"; ' +
      'unlink README.md; echo "rm=$?"; mv README.md gone.md; echo "mv=$?"; true';
    models.responses.enqueue(
      { kind: 'output', items: [commandCall(attack)] },
      {
        kind: 'output',
        items: [
          commandCall(
            `${writeFileCommand('slug.js', SLUG_JS)}\n${writeFileCommand('slug.test.js', SLUG_TEST_JS)}\ngit add slug.js slug.test.js && git commit -q -m 'Add slugify'`,
          ),
        ],
      },
      { kind: 'output', items: [assistantMessage('Done.')] },
    );
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      OPENAI_BASE_URL: models.chat.url,
      OPENAI_API_KEY: 'non-root-test-key-5566',
      AGENT_RUNNER_WORKER_BASE_URL: models.responses.baseUrl('127.0.0.1'),
      AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
      CI: 'true',
    };
    const run = await runAsUser(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], repo.root, env);
    const summary = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as { state?: string };
    expect(run.code, run.stderr).toBe(0);
    expect(summary.state).toBe('COMPLETE');

    // Every attempt failed, and the worker was told so (its command output went back to the model).
    const sentBack = JSON.stringify(models.responses.requests.map((request) => request.body));
    for (const attempt of ['append=1', 'chmod=1', 'rm=1', 'mv=1']) expect(sentBack).toContain(attempt);
    const sandboxReadme = path.join(repo.root, '.agent-runner', 'sandboxes', id, 'repo', 'README.md');
    expect(readFileSync(sandboxReadme, 'utf8')).toBe('# demo\n');
    const readmeStat = statSync(sandboxReadme);
    expect(readmeStat.uid).not.toBe(USER);
    expect(readmeStat.mode & 0o222).toBe(0);
    // The work itself is the user's: on the branch, in the worktree, owned by uid 1000.
    const worktreeSlug = path.join(repo.root, '.agent-runner', 'worktrees', id, 'slug.js');
    expect(readFileSync(worktreeSlug, 'utf8')).toBe(SLUG_JS);
    expect(statSync(worktreeSlug).uid).toBe(USER);

    // gc as the same user removes the sandbox it could not delete by itself; the branch stays.
    const gc = await runAsUser(['gc', '--force'], repo.root, env);
    expect(gc.code, gc.stderr).toBe(0);
    expect(existsSync(path.join(repo.root, '.agent-runner', 'sandboxes', id))).toBe(false);
    // (as root here, in uid 1000's repository: git needs to be told it is safe)
    expect(git(repo.root, '-c', 'safe.directory=*', 'log', '-1', '--format=%s', `agent-runner/${id}`)).toBe(
      'Add slugify',
    );
  });
});
