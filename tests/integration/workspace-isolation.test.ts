/**
 * Workspace isolation with real git and a real Docker sandbox: excluded content is nowhere in the sandbox,
 * read-only scope holds against the worker, the user's repository is out of reach, commits come back,
 * facts and DoD checks are recorded.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ExecResult } from '../../src/core/ports.js';
import { DEFAULT_EXCLUDE } from '../../src/config/schema.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { runCriteriaChecks } from '../../src/workspace/checks/criteria-checks.js';
import { runDodChecks } from '../../src/workspace/checks/dod-checks.js';
import { prepareTaskWorkspace, type PreparedWorkspace } from '../../src/workspace/prepare-task-workspace.js';
import type { Scope } from '../../src/workspace/scope/scope.js';
import { syncBack } from '../../src/workspace/sandbox-repo/sync-back.js';
import { collectFacts } from '../../src/workspace/task-facts.js';
import { cleanFacts } from '../support/core-fakes.js';
import { createTempRepo, type TempRepo } from '../support/git-repo.js';
import { sandboxOverWorkspace } from '../support/sandbox-exec.js';

const IMAGE = process.env.AGENT_RUNNER_TEST_BASE_IMAGE ?? 'agent-runner-base:bookworm';
const LABEL = { 'agent-runner.test': 'workspace-isolation' };
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
const taskIds: string[] = [];

const COMMITTED_SECRET = 'committed-secret-5b1e0a7d93';
const UNTRACKED_SECRET = 'dotenv-secret-c4f2e8a61b';

afterAll(async () => {
  for (const taskId of taskIds) {
    expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
  }
});

/** The user's repository: a committed secret, an untracked .env, a tag, another branch, a stash, a hook. */
async function userRepository(): Promise<TempRepo> {
  const repo = await createTempRepo({
    'README.md': '# demo\n',
    'src/app.js': 'console.log("app");\n',
    'docs/guide.md': 'the guide\n',
    'secrets/token.txt': `${COMMITTED_SECRET}\n`,
  });
  repo.git('tag', 'v1');
  repo.git('branch', 'feature');
  await repo.write('README.md', '# demo\nstashed change\n');
  repo.git('stash', 'push', '-q', '-m', 'person stash');
  await repo.write('.git/hooks/pre-commit', '#!/bin/sh\necho person hook\n');
  await repo.write('.env', `API_KEY=${UNTRACKED_SECRET}\n`);
  return repo;
}

async function prepare(repo: TempRepo, scope: Scope): Promise<PreparedWorkspace & { sandboxId: string }> {
  const taskId = `ws-${randomUUID().slice(0, 8)}`;
  taskIds.push(taskId);
  const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId, scope });
  const sandbox = await sandboxOverWorkspace(runtime, {
    taskId,
    repoRoot: repo.root,
    image: IMAGE,
    prepared,
    memoryBytes: 512 * 1024 * 1024,
    labels: LABEL,
  });
  onTestFinished(async () => {
    await runtime.remove(sandbox.id);
  });
  return { ...prepared, sandboxId: sandbox.id };
}

function run(sandboxId: string, script: string, user?: string): Promise<ExecResult> {
  return runtime.exec(sandboxId, ['bash', '-c', script], {
    workdir: '/workspace',
    tailBytes: 1024 * 1024,
    timeoutMs: 120_000,
    ...(user ? { user } : {}),
  });
}

/** Everything of the user's repository a worker might try to change (the runner's own refs and dir left out). */
async function repositoryState(repo: TempRepo): Promise<Record<string, unknown>> {
  const gitDir = path.join(repo.root, '.git');
  const hooks = await readdir(path.join(gitDir, 'hooks'));
  const hookContents = await Promise.all(
    hooks.sort().map(async (hook) => {
      const content = await readFile(path.join(gitDir, 'hooks', hook));
      return `${hook} ${createHash('sha256').update(content).digest('hex')}`;
    }),
  );
  const refs = repo
    .git('for-each-ref', '--format=%(refname) %(objectname)')
    .split('\n')
    .filter((line) => !line.startsWith('refs/agent-runner/') && !line.startsWith('refs/heads/agent-runner/'));
  return {
    refs,
    head: repo.git('symbolic-ref', 'HEAD'),
    config: await readFile(path.join(gitDir, 'config'), 'utf8'),
    hookContents,
    stash: repo.git('stash', 'list', '--format=%H %s'),
    env: await readFile(path.join(repo.root, '.env'), 'utf8'),
    readme: await readFile(path.join(repo.root, 'README.md'), 'utf8'),
    status: repo
      .git('status', '--porcelain', '--untracked-files=all')
      .split('\n')
      .filter((line) => !line.startsWith('?? .agent-runner/')),
  };
}

const OPEN_SCOPE: Scope = { exclude: [...DEFAULT_EXCLUDE], read: ['docs/**'], write: [] };

describe('workspace isolation in a Docker sandbox', () => {
  it('leaves no excluded or untracked secret anywhere in the sandbox, git objects included', async () => {
    const repo = await userRepository();
    const { sandboxId } = await prepare(repo, OPEN_SCOPE);
    // The search must be able to find things: the app's own content is found by the same command.
    const control = await runtime.exec(
      sandboxId,
      [
        'bash',
        '-c',
        'grep -rlaF -D skip --exclude-dir=proc --exclude-dir=sys -e "console.log(\\"app\\")" / 2>/dev/null; git cat-file --batch-all-objects --batch | grep -caF "console.log(\\"app\\")"',
      ],
      {
        timeoutMs: 30_000,
        workdir: '/workspace',
        user: '0:0',
        tailBytes: 65536,
        env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.directory', GIT_CONFIG_VALUE_0: '*' },
      },
    );
    expect(control.stdoutTail).toContain('/workspace/src/app.js');
    expect(control.stdoutTail.trim().split('\n').at(-1)).not.toBe('0');

    for (const secret of [COMMITTED_SECRET, UNTRACKED_SECRET]) {
      const result = await runtime.exec(
        sandboxId,
        [
          'bash',
          '-c',
          'grep -rlaF -D skip --exclude-dir=proc --exclude-dir=sys -e "$NEEDLE" / 2>/dev/null; echo objects=$(git cat-file --batch-all-objects --batch | grep -caF -e "$NEEDLE")',
        ],
        {
          timeoutMs: 30_000,
          workdir: '/workspace',
          user: '0:0',
          tailBytes: 65536,
          env: {
            NEEDLE: secret,
            GIT_CONFIG_COUNT: '1',
            GIT_CONFIG_KEY_0: 'safe.directory',
            GIT_CONFIG_VALUE_0: '*',
          },
        },
      );
      expect(result.stdoutTail.trim()).toBe('objects=0');
    }
    const listing = await run(sandboxId, 'ls -a /workspace; ls -a /workspace/secrets 2>&1 || true');
    expect(listing.stdoutTail).not.toMatch(/^\.env$/m);
    expect(listing.stdoutTail).toContain('No such file or directory');
  });

  it('refuses writes to read-only paths as the worker and keeps the user files unchanged', async () => {
    const repo = await userRepository();
    const before = await repositoryState(repo);
    const scope: Scope = { exclude: [...DEFAULT_EXCLUDE], read: ['docs/**'], write: ['src/**'] };
    const { sandboxId, worktreePath } = await prepare(repo, scope);
    const attempts = {
      overwrite: 'echo changed > docs/guide.md',
      append: 'echo more >> README.md',
      remove: 'rm -f docs/guide.md',
      rename: 'mv README.md README.old',
      chmod: 'chmod u+w docs/guide.md',
      removeDir: 'rm -rf docs',
    };
    for (const [name, command] of Object.entries(attempts)) {
      const result = await run(sandboxId, command);
      expect({ name, exitCode: result.exitCode }).not.toEqual({ name, exitCode: 0 });
    }
    const allowed = await run(sandboxId, 'echo "console.log(2);" > src/app.js && cat src/app.js && id -u');
    expect(allowed.exitCode).toBe(0);
    expect(allowed.stdoutTail).toBe('console.log(2);\n10001\n');
    const state = await run(sandboxId, 'cat docs/guide.md README.md');
    expect(state.stdoutTail).toBe('the guide\n# demo\n');
    expect(await repositoryState(repo)).toEqual(before);
    expect(await readFile(path.join(worktreePath, 'docs/guide.md'), 'utf8')).toBe('the guide\n');
  });

  it('keeps refs, config, hooks, stash and the main tree of the user out of reach; commits come back', async () => {
    const repo = await userRepository();
    const before = await repositoryState(repo);
    const prepared = await prepare(repo, OPEN_SCOPE);
    const attack = await run(
      prepared.sandboxId,
      [
        'set -x',
        'echo "console.log(\\"worker\\");" > src/app.js',
        'git commit -qam "worker change"',
        'git branch -f main HEAD~1; git update-ref -d refs/heads/main; git tag -d v1; git tag v1 HEAD',
        'git update-ref refs/heads/feature HEAD; git stash clear',
        'git config --global user.name evil; git config user.email evil@example.test',
        'printf "#!/bin/sh\\nexit 1\\n" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit',
        `ls ${repo.root} 2>&1; ls /work 2>&1; true`,
      ].join('\n'),
    );
    expect(attack.stderrTail).toContain('git tag -d v1');
    const synced = await syncBack({ repoRoot: repo.root, taskId: prepared.taskId, scope: OPEN_SCOPE });
    expect(synced.problem).toBeNull();
    expect(synced.commits.map((commit) => commit.subject)).toEqual(['worker change']);

    expect(await repositoryState(repo)).toEqual(before);
    expect(repo.git('rev-parse', prepared.branch).trim()).toBe(synced.headSha);
    expect(repo.git('rev-parse', `${synced.headSha}~1`).trim()).toBe(prepared.baseSha);
    expect(repo.git('show', `${synced.headSha}:secrets/token.txt`)).toBe(`${COMMITTED_SECRET}\n`);
    expect(await readFile(path.join(prepared.worktreePath, 'src/app.js'), 'utf8')).toBe(
      'console.log("worker");\n',
    );
    expect(await readFile(path.join(prepared.worktreePath, 'secrets/token.txt'), 'utf8')).toBe(
      `${COMMITTED_SECRET}\n`,
    );
    expect(existsSync(path.join(prepared.worktreePath, '.env'))).toBe(false);
  });

  it('records facts: commits, dirty tree, diff stat and scope violations', async () => {
    const repo = await userRepository();
    const scope: Scope = { exclude: [...DEFAULT_EXCLUDE], read: ['docs/**'], write: ['src/**'] };
    const prepared = await prepare(repo, scope);
    const work = await run(
      prepared.sandboxId,
      [
        'set -e',
        'printf "a\\nb\\n" > src/new.js',
        'printf "PLANTED=1\\n" > .env',
        'git add -A && git commit -qm "add new and env"',
        // Read-only files cannot be written, but plumbing can still commit a change to them: caught on the host.
        'git rm -q --cached docs/guide.md && git commit -qm "drop guide from the index"',
        'mkdir -p notes && echo todo > notes/todo.txt',
        'echo wip >> src/app.js',
      ].join('\n'),
    );
    expect(work.exitCode).toBe(0);
    const sync = await syncBack({ repoRoot: repo.root, taskId: prepared.taskId, scope });
    const facts = await collectFacts(runtime, prepared.sandboxId, {
      repoRoot: prepared.repoRoot,
      taskId: prepared.taskId,
      branch: prepared.branch,
      baseSha: prepared.baseSha,
      scope,
      sync,
      worker: { exitCode: 0, signal: null, timedOut: false },
    });
    expect(facts.headSha).toBe(sync.headSha);
    expect(facts.commits.count).toBe(2);
    expect(facts.commits.list.map((commit) => commit.subject)).toEqual([
      'drop guide from the index',
      'add new and env',
    ]);
    expect(facts.commits.list[0]?.sha).toBe(sync.headSha);
    expect(facts.changedFiles).toEqual([
      { path: 'docs/guide.md', status: 'D', insertions: 0, deletions: 1 },
      { path: 'src/new.js', status: 'A', insertions: 2, deletions: 0 },
    ]);
    expect(facts.diffStat).toEqual({ files: 2, insertions: 2, deletions: 1 });
    expect(facts.dirty).toBe(true);
    expect(facts.uncommittedFiles).toEqual(
      expect.arrayContaining([
        { path: 'src/app.js', status: ' M' },
        { path: 'notes/todo.txt', status: '??' },
      ]),
    );
    expect(facts.uncommittedDiffStat).toEqual({ files: 1, insertions: 1, deletions: 0 });
    expect(facts.scopeViolations).toEqual([
      { path: 'docs/guide.md', access: 'read', where: 'committed' },
      { path: '.env', access: 'excluded', where: 'committed' },
      { path: 'docs/guide.md', access: 'read', where: 'uncommitted' },
      { path: 'notes/todo.txt', access: 'outside_write', where: 'uncommitted' },
    ]);
    expect(facts.worker).toEqual({ exitCode: 0, signal: null, timedOut: false });
    expect(facts.problems).toEqual([]);
  });

  it('runs DoD checks in order and records passed, failed and timeout with output tails', async () => {
    const repo = await userRepository();
    const prepared = await prepare(repo, OPEN_SCOPE);
    const checks = [
      { name: 'ok', command: 'echo all good; id -u', timeout: 30_000 },
      { name: 'bad', command: 'echo first; echo broken >&2; exit 3', timeout: 30_000 },
      { name: 'slow', command: 'echo starting; sleep 30', timeout: 1_500 },
    ];
    const results = await runDodChecks(runtime, prepared.sandboxId, checks, { graceMs: 500 });
    expect(results.map((result) => [result.name, result.status, result.exitCode])).toEqual([
      ['ok', 'passed', 0],
      ['bad', 'failed', 3],
      ['slow', 'timeout', null],
    ]);
    expect(results[0]?.outputTail).toBe('all good\n10001');
    expect(results[1]?.outputTail).toBe('first\n--- stderr ---\nbroken');
    expect(results[2]?.outputTail).toBe('starting');
    expect(results[2]?.durationMs).toBeGreaterThanOrEqual(1_500);
    expect(results[2]?.durationMs).toBeLessThan(15_000);
    expect(results.every((result) => !result.ranOnDirtyTree)).toBe(true);

    await run(prepared.sandboxId, 'echo scratch > src/scratch.txt');
    const dirty = await runDodChecks(runtime, prepared.sandboxId, [checks[0]!]);
    expect(dirty[0]).toMatchObject({ status: 'passed', ranOnDirtyTree: true });
    const skipped = await runDodChecks(runtime, prepared.sandboxId, checks, { skip: true });
    expect(skipped.map((result) => result.status)).toEqual(['skipped', 'skipped', 'skipped']);
  });

  it('a DoD check that rewrites tracked files did not check the commit: failed, named, and the tree put back', async () => {
    const repo = await userRepository();
    const prepared = await prepare(repo, OPEN_SCOPE);
    const checks = [
      // A formatter run with --write: exit 0, and the committed file is no longer what was checked.
      {
        name: 'lint',
        command: 'sed -i s/app/APP/ src/app.js && rm README.md && echo formatted',
        timeout: 30_000,
      },
      { name: 'test', command: 'cat src/app.js && test -f README.md', timeout: 30_000 },
    ];
    const results = await runDodChecks(runtime, prepared.sandboxId, checks, { graceMs: 500 });
    expect(results[0]).toMatchObject({
      status: 'failed',
      exitCode: 0,
      rewrote: { paths: ['README.md', 'src/app.js'], count: 2 },
    });
    expect(results[0]?.outputTail).toMatch(
      /^The check changed 2 tracked file\(s\), so it did not check the committed tree/,
    );
    // The next check ran on the commit again: the rewrite and the deletion were put back.
    expect(results[1]).toMatchObject({ status: 'passed', outputTail: 'console.log("app");' });
    expect((await run(prepared.sandboxId, 'git status --porcelain')).stdoutTail).toBe('');
  });

  it("a criterion's command check that rewrites tracked files fails the same way, and the tree is put back", async () => {
    const repo = await userRepository();
    const prepared = await prepare(repo, OPEN_SCOPE);
    const head = (await run(prepared.sandboxId, 'git rev-parse HEAD')).stdoutTail.trim();
    const criterion = (id: string, command: string) => ({
      id,
      description: id,
      type: 'quality',
      critical: true,
      check: { kind: 'command' as const, command },
    });
    const results = await runCriteriaChecks(
      runtime,
      prepared.sandboxId,
      [
        criterion('AC-1', 'sed -i s/app/APP/ src/app.js && echo formatted'),
        criterion('AC-2', 'cat src/app.js'),
      ],
      cleanFacts(head),
      { repoRoot: repo.root, timeoutMs: 60_000, graceMs: 500 },
    );
    expect(results[0]).toMatchObject({
      status: 'failed',
      exitCode: 0,
      rewrote: { paths: ['src/app.js'], count: 1 },
    });
    expect(results[1]).toMatchObject({ status: 'passed', outputTail: 'console.log("app");' });
    expect((await run(prepared.sandboxId, 'git status --porcelain')).stdoutTail).toBe('');
  });
});
