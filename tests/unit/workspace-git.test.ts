/**
 * The git side of the workspace with real git in temporary repositories (no Docker): task branch, worktree,
 * snapshot, sync-back with replay, DoD detection, repository preconditions.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DEFAULT_EXCLUDE } from '../../src/config/schema.js';
import { UserError } from '../../src/errors.js';
import { detectDodChecks, resolveDodChecks } from '../../src/workspace/checks/detect-dod-checks.js';
import { inspectRepository } from '../../src/workspace/git/inspect-repository.js';
import { prepareTaskWorkspace, type WorkspaceMount } from '../../src/workspace/prepare-task-workspace.js';
import { removeTaskSandbox } from '../../src/workspace/sandbox-repo/remove-task-sandbox.js';
import type { Scope } from '../../src/workspace/scope/scope.js';
import { syncBack } from '../../src/workspace/sandbox-repo/sync-back.js';
import { pendingReasonWords, shortGitMessage } from '../../src/workspace/task-facts.js';
import { createTempRepo, runGit } from '../support/git-repo.js';

const SCOPE: Scope = { exclude: [...DEFAULT_EXCLUDE], read: [], write: [] };
const SECRET = 'token-7f3a9c1e-unique-secret';

/** Acts as the worker on the host (tests only): git in the sandbox repository, whoever owns it. */
function worker(sandboxRepoPath: string, ...args: string[]): string {
  return runGit(sandboxRepoPath, ['-c', 'safe.directory=*', ...args]);
}

async function repoWithSecret() {
  const repo = await createTempRepo({
    'README.md': '# demo\n',
    'src/app.js': 'console.log(1);\n',
    'secrets/token.txt': `${SECRET}\n`,
  });
  return repo;
}

describe('prepareTaskWorkspace (git side)', () => {
  it('creates the task branch, worktree, .gitignore and a sandbox repository without excluded objects', async () => {
    const repo = await repoWithSecret();
    const base = repo.git('rev-parse', 'HEAD').trim();
    await repo.write('notes.txt', 'uncommitted\n');
    // agent-runner's own config is not the person's uncommitted work.
    await repo.write('agent-runner.yaml', 'sandbox:\n  setup: [npm ci]\n');
    const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'T-1', scope: SCOPE });

    expect(prepared.branch).toBe('agent-runner/T-1');
    expect(prepared.baseSha).toBe(base);
    expect(prepared.dirtyStart).toBe(true);
    expect(prepared.dirtyPaths).toEqual(['notes.txt']);
    expect(repo.git('rev-parse', 'agent-runner/T-1').trim()).toBe(base);
    expect(existsSync(path.join(prepared.worktreePath, 'secrets/token.txt'))).toBe(true);
    expect(prepared.mounts).toEqual([
      { hostPath: prepared.sandboxRepoPath, containerPath: '/workspace', readOnly: false },
    ]);
    expect(await readFile(path.join(repo.root, '.agent-runner/.gitignore'), 'utf8')).toContain('worktrees/');
    // .agent-runner content other than notes is ignored: the status only shows the person's own file + .gitignore.
    expect(repo.git('status', '--porcelain', '--untracked-files=all')).not.toContain('worktrees');

    expect(existsSync(path.join(prepared.sandboxRepoPath, 'src/app.js'))).toBe(true);
    expect(existsSync(path.join(prepared.sandboxRepoPath, 'secrets'))).toBe(false);
    // The person's object store was borrowed for the checkout only: the sandbox stands on its own objects.
    expect(existsSync(path.join(prepared.sandboxRepoPath, '.git/objects/info/alternates'))).toBe(false);
    expect(worker(prepared.sandboxRepoPath, 'fsck', '--connectivity-only', '--no-dangling').trim()).toBe('');
    expect(existsSync(path.join(prepared.sandboxRepoPath, 'notes.txt'))).toBe(false);
    const objects = worker(prepared.sandboxRepoPath, 'cat-file', '--batch-all-objects', '--batch');
    expect(objects).toContain('console.log(1);');
    expect(objects).not.toContain(SECRET);
    expect(worker(prepared.sandboxRepoPath, 'rev-list', '--all').trim().split('\n')).toEqual([
      prepared.snapshotSha,
    ]);
    expect(worker(prepared.sandboxRepoPath, 'symbolic-ref', '--short', 'HEAD').trim()).toBe(
      'agent-runner/T-1',
    );
  });

  it('reuses the branch and sandbox on a later run and re-creates a missing worktree', async () => {
    const repo = await repoWithSecret();
    const first = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'T-2', scope: SCOPE });
    await writeFile(path.join(first.sandboxRepoPath, 'wip.txt'), 'work in progress\n');
    repo.git('worktree', 'remove', '--force', first.worktreePath);
    const second = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'T-2', scope: SCOPE });
    expect(second.branchReused).toBe(true);
    expect(second.sandboxReused).toBe(true);
    expect(second.worktreeCreated).toBe(true);
    expect(second.snapshotSha).toBe(first.snapshotSha);
    expect(existsSync(path.join(second.worktreePath, 'README.md'))).toBe(true);
    expect(await readFile(path.join(second.sandboxRepoPath, 'wip.txt'), 'utf8')).toBe('work in progress\n');
  });

  it('says the workspace is mountable before its files are checked out, with the mount it ends with', async () => {
    const repo = await repoWithSecret();
    let seen: { mount: WorkspaceMount; entries: string[] } | null = null;
    const prepared = await prepareTaskWorkspace({
      repoRoot: repo.root,
      taskId: 'M-1',
      scope: SCOPE,
      onMountable: (mount) => {
        seen = { mount, entries: readdirSync(mount.mounts[0]!.hostPath) };
      },
    });
    expect(seen).not.toBeNull();
    const { mount, entries } = seen!;
    // The directory exists (a container can mount it) and holds nothing yet.
    expect(entries).toEqual([]);
    expect(mount).toEqual({
      runDir: prepared.runDir,
      workerUser: prepared.workerUser,
      mounts: prepared.mounts,
      workdir: prepared.workdir,
      env: prepared.env,
    });
    expect(existsSync(path.join(prepared.sandboxRepoPath, 'src/app.js'))).toBe(true);
  });

  it('a sandbox repository that fails removes the directory it made, so the next run starts clean', async () => {
    const repo = await repoWithSecret();
    const failed = await prepareTaskWorkspace({
      repoRoot: repo.root,
      taskId: 'M-2',
      scope: SCOPE,
      // Something in the way of `git init` as soon as the directory is there.
      onMountable: (mount) => writeFileSync(path.join(mount.mounts[0]!.hostPath, '.git'), 'not a git dir\n'),
    }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(Error);
    const sandboxRepoPath = path.join(repo.root, '.agent-runner/sandboxes/M-2/repo');
    expect(existsSync(sandboxRepoPath)).toBe(false);
    const again = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'M-2', scope: SCOPE });
    expect(again.sandboxReused).toBe(false);
    expect(existsSync(path.join(again.sandboxRepoPath, 'src/app.js'))).toBe(true);
  });

  it('branches from --base', async () => {
    const repo = await repoWithSecret();
    const first = repo.git('rev-parse', 'HEAD').trim();
    await repo.commit('second', { 'src/b.js': 'b\n' });
    const prepared = await prepareTaskWorkspace({
      repoRoot: repo.root,
      taskId: 'T-3',
      base: first,
      scope: SCOPE,
    });
    expect(prepared.baseSha).toBe(first);
    expect(existsSync(path.join(prepared.sandboxRepoPath, 'src/b.js'))).toBe(false);
    const error = await prepareTaskWorkspace({
      repoRoot: repo.root,
      taskId: 'T-4',
      base: 'nope',
      scope: SCOPE,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UserError);
  });
});

describe('syncBack (git side)', () => {
  it('replays worker commits onto the real base with excluded files put back and updates the worktree', async () => {
    const repo = await repoWithSecret();
    const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'S-1', scope: SCOPE });
    await writeFile(path.join(prepared.sandboxRepoPath, 'src/app.js'), 'console.log(2);\n');
    await writeFile(path.join(prepared.sandboxRepoPath, '.env'), 'PLANTED=1\n');
    worker(prepared.sandboxRepoPath, 'add', '-A');
    worker(prepared.sandboxRepoPath, 'commit', '-q', '-m', 'change app', '-m', 'body line');
    await writeFile(path.join(prepared.sandboxRepoPath, 'src/new.js'), 'new\n');
    worker(prepared.sandboxRepoPath, 'add', '-A');
    worker(prepared.sandboxRepoPath, 'commit', '-q', '-m', 'add new');

    const synced = await syncBack({ repoRoot: repo.root, taskId: 'S-1', scope: SCOPE });
    expect(synced.problem).toBeNull();
    expect(synced.commits.map((commit) => commit.subject)).toEqual(['change app', 'add new']);
    expect(synced.commits[0]?.excludedTouched).toEqual(['.env']);
    expect(synced.pendingRef).toBeNull();
    expect(synced.worktreeUpdated).toBe(true);
    expect(repo.git('rev-parse', 'agent-runner/S-1').trim()).toBe(synced.headSha);
    expect(repo.git('rev-parse', `${synced.headSha}~2`).trim()).toBe(prepared.baseSha);
    expect(repo.git('show', `${synced.headSha}:secrets/token.txt`)).toBe(`${SECRET}\n`);
    expect(repo.git('ls-tree', '-r', '--name-only', synced.headSha)).not.toContain('.env');
    expect(repo.git('log', '-1', '--format=%B', `${synced.headSha}~1`)).toBe('change app\n\nbody line\n\n');
    // Author, committer and their dates are the worker's own (the test helper's identity here).
    const format = '--format=%an <%ae> %ad|%cn <%ce> %cd';
    expect(repo.git('log', '-1', format, synced.headSha)).toBe(
      worker(prepared.sandboxRepoPath, 'log', '-1', format, 'HEAD'),
    );
    expect(await readFile(path.join(prepared.worktreePath, 'src/new.js'), 'utf8')).toBe('new\n');
    expect(await readFile(path.join(prepared.worktreePath, 'secrets/token.txt'), 'utf8')).toBe(`${SECRET}\n`);

    const again = await syncBack({ repoRoot: repo.root, taskId: 'S-1', scope: SCOPE });
    expect(again.commits).toEqual([]);
    expect(again.headSha).toBe(synced.headSha);
  });

  it('keeps the commits under a pending ref when the person edited the worktree', async () => {
    const repo = await repoWithSecret();
    const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'S-2', scope: SCOPE });
    await writeFile(path.join(prepared.worktreePath, 'README.md'), '# edited by the person\n');
    await writeFile(path.join(prepared.sandboxRepoPath, 'README.md'), '# edited by the worker\n');
    worker(prepared.sandboxRepoPath, 'commit', '-q', '-am', 'worker readme');
    const synced = await syncBack({ repoRoot: repo.root, taskId: 'S-2', scope: SCOPE });
    expect(synced.pendingRef).toBe('refs/agent-runner/pending/S-2');
    expect(synced.pendingReason).toBe('worktree_conflict');
    // git's own words on why, kept short for the facts.
    expect(synced.pendingDetail).toMatch(/would be overwritten/);
    expect(pendingReasonWords(synced, prepared.worktreePath)).toMatch(
      /^the worktree .*S-2 could not be updated to it \(git: error: Your local changes .*would be overwritten/,
    );
    expect(repo.git('rev-parse', 'refs/agent-runner/pending/S-2').trim()).toBe(synced.headSha);
    expect(repo.git('rev-parse', 'agent-runner/S-2').trim()).toBe(prepared.baseSha);
    expect(await readFile(path.join(prepared.worktreePath, 'README.md'), 'utf8')).toBe(
      '# edited by the person\n',
    );
  });

  it("git's message about a worker's file is cut short and cleaned before it is shown", () => {
    const name = `${'n'.repeat(300)}\x1b[2J\u202e\`x`;
    const said = shortGitMessage(`error: cannot stat '${name}': File name too long\nsecond line\n`);
    expect(said).toBe(`error: cannot stat '${'n'.repeat(38)}… File name too long`);
    expect(shortGitMessage(`fatal: ${'word '.repeat(100)}`)).toHaveLength(160);
    expect(shortGitMessage('\n\n  error: \u202eevil\x07 \tname\n')).toBe('error: ?evil? name');
  });

  it('reports a deleted sandbox branch as a problem and changes nothing', async () => {
    const repo = await repoWithSecret();
    const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'S-3', scope: SCOPE });
    worker(prepared.sandboxRepoPath, 'checkout', '-q', '--detach');
    worker(prepared.sandboxRepoPath, 'branch', '-D', 'agent-runner/S-3');
    const synced = await syncBack({ repoRoot: repo.root, taskId: 'S-3', scope: SCOPE });
    expect(synced.problem).toMatch(/could not fetch/);
    expect(synced.headSha).toBe(prepared.baseSha);
  });

  it('continues from the branch head when the sandbox repository was removed', async () => {
    const repo = await repoWithSecret();
    const first = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'S-4', scope: SCOPE });
    await writeFile(path.join(first.sandboxRepoPath, 'a.txt'), 'a\n');
    worker(first.sandboxRepoPath, 'add', '-A');
    worker(first.sandboxRepoPath, 'commit', '-q', '-m', 'a');
    const one = await syncBack({ repoRoot: repo.root, taskId: 'S-4', scope: SCOPE });
    await rm(path.dirname(first.sandboxRepoPath), { recursive: true, force: true });
    const second = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'S-4', scope: SCOPE });
    expect(second.sandboxReused).toBe(false);
    expect(second.snapshotOf).toBe(one.headSha);
    expect(second.baseSha).toBe(first.baseSha);
    await writeFile(path.join(second.sandboxRepoPath, 'b.txt'), 'b\n');
    worker(second.sandboxRepoPath, 'add', '-A');
    worker(second.sandboxRepoPath, 'commit', '-q', '-m', 'b');
    const two = await syncBack({ repoRoot: repo.root, taskId: 'S-4', scope: SCOPE });
    expect(repo.git('rev-parse', `${two.headSha}~1`).trim()).toBe(one.headSha);
    expect(repo.git('show', `${two.headSha}:secrets/token.txt`)).toBe(`${SECRET}\n`);
    expect(repo.git('log', '--format=%s', `${first.baseSha}..agent-runner/S-4`).trim().split('\n')).toEqual([
      'b',
      'a',
    ]);
  });
});

describe('syncBack keeps .agent-runner/ as the base has it', () => {
  it("puts the base's .agent-runner/ back and records every change the worker committed there", async () => {
    const repo = await createTempRepo({
      'README.md': '# demo\n',
      // Committed by the person: present in the sandbox, never the worker's to change.
      '.agent-runner/task-OLD.md': 'old note\n',
      '.agent-runner/keep.md': 'keep\n',
      '.agent-runner/gone.md': 'gone\n',
    });
    const baseEntries = repo.git('ls-tree', '-r', 'HEAD', '--', '.agent-runner');
    const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'S-5', scope: SCOPE });
    const sandbox = prepared.sandboxRepoPath;
    // Read-only files may not be writable: the worker replaces them instead.
    await rm(path.join(sandbox, '.agent-runner/task-OLD.md'));
    await writeFile(path.join(sandbox, '.agent-runner/task-OLD.md'), 'forged instructions\n');
    await rm(path.join(sandbox, '.agent-runner/gone.md'));
    await writeFile(path.join(sandbox, '.agent-runner/task-FORGED.md'), 'forged note\n');
    await writeFile(path.join(sandbox, 'src.js'), 'work\n');
    worker(sandbox, 'add', '-A', '-f');
    worker(sandbox, 'commit', '-q', '-m', 'work and notes');
    // Then the whole directory swapped for a link.
    worker(sandbox, 'rm', '-r', '-q', '--cached', '.agent-runner');
    await rm(path.join(sandbox, '.agent-runner'), { recursive: true, force: true });
    await symlink('/etc', path.join(sandbox, '.agent-runner'));
    worker(sandbox, 'add', '-A', '-f');
    worker(sandbox, 'commit', '-q', '-m', 'link');

    const synced = await syncBack({ repoRoot: repo.root, taskId: 'S-5', scope: SCOPE });
    expect(synced.problem).toBeNull();
    // The attack ran: the worker's own commits hold the forged note and the link.
    expect(repo.git('show', `refs/agent-runner/sandbox/S-5~1:.agent-runner/task-FORGED.md`)).toBe(
      'forged note\n',
    );
    expect(repo.git('ls-tree', 'refs/agent-runner/sandbox/S-5', '.agent-runner')).toMatch(/^120000 /);
    expect([...(synced.commits[0]?.excludedTouched ?? [])].sort()).toEqual([
      '.agent-runner/gone.md',
      '.agent-runner/task-FORGED.md',
      '.agent-runner/task-OLD.md',
    ]);
    expect([...(synced.commits[1]?.excludedTouched ?? [])].sort()).toEqual([
      '.agent-runner',
      '.agent-runner/gone.md',
      '.agent-runner/keep.md',
      '.agent-runner/task-OLD.md',
    ]);
    // It failed: both replayed commits hold the base's .agent-runner/ exactly, the work came through.
    for (const commit of synced.commits)
      expect(repo.git('ls-tree', '-r', commit.sha, '--', '.agent-runner')).toBe(baseEntries);
    expect(repo.git('show', `agent-runner/S-5:src.js`)).toBe('work\n');
  });
});

describe('inspectRepository', () => {
  it('explains a directory that is not a repository, and one without commits', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ar-norepo-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    await expect(inspectRepository(dir)).rejects.toThrow(/not inside a git repository.*git init/);
    runGit(dir, ['init', '-q']);
    await expect(inspectRepository(dir)).rejects.toMatchObject({ code: 'repository_invalid' });
    await expect(inspectRepository(dir)).rejects.toThrow(/no commits yet/);
  });

  it('allows a detached HEAD and reports it', async () => {
    const repo = await createTempRepo({ 'a.txt': 'a\n' });
    repo.git('checkout', '-q', '--detach');
    const info = await inspectRepository(path.join(repo.root));
    expect(info.detached).toBe(true);
    expect(info.branch).toBeNull();
    expect(info.headSha).toBe(repo.git('rev-parse', 'HEAD').trim());
  });

  it('from a subdirectory: the top level, its git directory, HEAD and the branch', async () => {
    const repo = await createTempRepo({ 'src/a.txt': 'a\n' });
    const info = await inspectRepository(path.join(repo.root, 'src'));
    expect(info).toEqual({
      root: repo.git('rev-parse', '--show-toplevel').trim(),
      gitCommonDir: path.join(repo.git('rev-parse', '--show-toplevel').trim(), '.git'),
      headSha: repo.git('rev-parse', 'HEAD').trim(),
      branch: repo.git('symbolic-ref', '--short', 'HEAD').trim(),
      detached: false,
    });
  });

  it('refuses a linked worktree and a bare repository, naming the fix', async () => {
    const repo = await createTempRepo({ 'a.txt': 'a\n' });
    const linked = path.join(repo.root, '..', `${path.basename(repo.root)}-linked`);
    repo.git('worktree', 'add', '-q', '--detach', linked);
    onTestFinished(() => rm(linked, { recursive: true, force: true }));
    await expect(inspectRepository(linked)).rejects.toThrow(/is a linked worktree .*main working tree/);
    const bare = `${repo.root}-bare.git`;
    runGit(repo.root, ['clone', '-q', '--bare', repo.root, bare]);
    onTestFinished(() => rm(bare, { recursive: true, force: true }));
    await expect(inspectRepository(bare)).rejects.toThrow(/is a bare git repository.*git clone/);
  });
});

describe('detectDodChecks', () => {
  it('finds npm test (and other scripts) with the package manager of the lockfile', async () => {
    const repo = await createTempRepo({
      'package.json': JSON.stringify({ scripts: { test: 'vitest run', lint: 'eslint .', start: 'node x' } }),
      'package-lock.json': '{}',
    });
    const found = await detectDodChecks(repo.root);
    expect(found.checks.map((check) => check.command)).toEqual(['npm run lint', 'npm test']);
    expect(found.detectedFrom[1]).toBe('package.json scripts.test via npm (from package-lock.json)');
    await writeFile(path.join(repo.root, 'pnpm-lock.yaml'), '');
    expect((await detectDodChecks(repo.root)).checks.map((check) => check.command)).toEqual([
      'pnpm run lint',
      'pnpm test',
    ]);
  });

  it('skips the npm placeholder test script', async () => {
    const repo = await createTempRepo({
      'package.json': JSON.stringify({ scripts: { test: 'echo "Error: no test specified" && exit 1' } }),
    });
    expect((await detectDodChecks(repo.root)).checks).toEqual([]);
  });

  it('finds go test, cargo test, make test and pytest', async () => {
    const repo = await createTempRepo({
      'go.mod': 'module example.test/x\n',
      'Cargo.toml': '[package]\nname = "x"\n',
      Makefile: 'build:\n\tcc x.c\ntest: build\n\t./run-tests\n',
      'pyproject.toml': '[tool.pytest.ini_options]\n',
    });
    const found = await detectDodChecks(repo.root);
    expect(found.checks.map((check) => check.command)).toEqual([
      'make test',
      'go test ./...',
      'cargo test',
      'python3 -m pytest',
    ]);
    expect(found.detectedFrom).toEqual(['Makefile target test', 'go.mod', 'Cargo.toml', 'pyproject.toml']);
  });

  it('prefers configured checks', async () => {
    const repo = await createTempRepo({ 'go.mod': 'module x\n' });
    const configured = [{ name: 'unit', command: 'make unit', timeout: 1000 }];
    const resolved = await resolveDodChecks({ checks: configured, skip: false }, repo.root);
    expect(resolved).toMatchObject({ source: 'config', checks: configured });
    expect((await resolveDodChecks({ skip: true }, repo.root)).source).toBe('detected');
  });
});

describe('removeTaskSandbox', () => {
  it('removes the sandbox and its refs; the next prepare starts a new sandbox from the branch head', async () => {
    const repo = await repoWithSecret();
    const first = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'R-1', scope: SCOPE });
    await removeTaskSandbox(repo.root, 'R-1');
    expect(existsSync(first.sandboxRepoPath)).toBe(false);
    expect(repo.git('for-each-ref', 'refs/agent-runner/')).toBe('');
    expect(repo.git('rev-parse', 'agent-runner/R-1').trim()).toBe(first.baseSha);
    const second = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'R-1', scope: SCOPE });
    expect(second.sandboxReused).toBe(false);
    expect(existsSync(path.join(second.sandboxRepoPath, 'README.md'))).toBe(true);
  });
});

describe('syncBack refuses a planted git directory', () => {
  it.each([
    ['alternates', 'objects/info/alternates'],
    ['commondir', 'commondir'],
  ])('does not read a sandbox .git with %s', async (_name, relative) => {
    const repo = await repoWithSecret();
    const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId: 'P-1', scope: SCOPE });
    await writeFile(path.join(prepared.sandboxRepoPath, 'x.txt'), 'x\n');
    worker(prepared.sandboxRepoPath, 'add', '-A');
    worker(prepared.sandboxRepoPath, 'commit', '-q', '-m', 'x');
    await writeFile(path.join(prepared.sandboxRepoPath, '.git', relative), `${repo.root}/.git/objects\n`);
    const synced = await syncBack({ repoRoot: repo.root, taskId: 'P-1', scope: SCOPE });
    expect(synced.problem).toContain(relative);
    expect(synced.commits).toEqual([]);
    expect(repo.git('rev-parse', 'agent-runner/P-1').trim()).toBe(prepared.baseSha);
  });
});
