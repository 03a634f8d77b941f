/**
 * The bounds of the replay with real git (no Docker): too many new commits, or a head tree too large to check
 * out, is refused before anything is replayed or moved; an abort signal cuts the replay and its git calls.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_EXCLUDE, configSchema } from '../../src/config/schema.js';
import { AgentRunnerError } from '../../src/errors.js';
import { git as hostGit } from '../../src/workspace/git/git-command.js';
import { prepareTaskWorkspace } from '../../src/workspace/prepare-task-workspace.js';
import { treeBytes } from '../../src/workspace/sandbox-repo/replay-caps.js';
import type { Scope } from '../../src/workspace/scope/scope.js';
import { syncBack } from '../../src/workspace/sandbox-repo/sync-back.js';
import { limitMessage } from '../../src/core/limits.js';
import { createTempRepo, runGit } from '../support/git-repo.js';

const SCOPE: Scope = { exclude: [...DEFAULT_EXCLUDE], read: [], write: [] };

/** Acts as the worker on the host (tests only): git in the sandbox repository. */
function worker(sandboxRepoPath: string, ...args: string[]): string {
  return runGit(sandboxRepoPath, ['-c', 'safe.directory=*', ...args]);
}

/** `count` empty commits on the sandbox's branch in one fast-import, as a flooding worker makes them. */
function flood(sandboxRepoPath: string, count: number): void {
  const branch = worker(sandboxRepoPath, 'symbolic-ref', 'HEAD').trim();
  const head = worker(sandboxRepoPath, 'rev-parse', 'HEAD').trim();
  let stream = '';
  for (let index = 1; index <= count; index += 1) {
    stream += `commit ${branch}\ncommitter w <w@example.com> 1700000000 +0000\ndata 6\nflood\n`;
    if (index === 1) stream += `from ${head}\n`;
    stream += '\n';
  }
  runGit(sandboxRepoPath, ['-c', 'safe.directory=*', 'fast-import', '--quiet'], { input: stream });
}

async function preparedTask(taskId: string) {
  const repo = await createTempRepo({ 'README.md': '# demo\n' });
  const prepared = await prepareTaskWorkspace({ repoRoot: repo.root, taskId, scope: SCOPE });
  await prepared.worktreeReady;
  return { repo, prepared };
}

// Real git, a replay of a dozen commits: seconds on a loaded machine, more than the unit project's default.
describe('sandbox.replay caps', { timeout: 60_000 }, () => {
  it('has documented defaults: 500 commits, a 2 GiB tree', () => {
    expect(configSchema.parse({}).sandbox.replay).toEqual({ maxCommits: 500, maxTreeBytes: 2 * 1024 ** 3 });
    expect(configSchema.parse({ sandbox: { replay: { maxTreeBytes: '50m' } } }).sandbox.replay).toEqual({
      maxCommits: 500,
      maxTreeBytes: 50 * 1024 ** 2,
    });
  });

  it('refuses more new commits than maxCommits before replaying any', async () => {
    const { repo, prepared } = await preparedTask('C-1');
    flood(prepared.sandboxRepoPath, 12);
    const synced = await syncBack({
      repoRoot: repo.root,
      taskId: 'C-1',
      scope: SCOPE,
      caps: { maxCommits: 10, maxTreeBytes: 2 * 1024 ** 3 },
    });
    expect(synced.capped).toEqual({ cap: 'max_commits', limit: 10, actual: 12 });
    expect(synced.commits).toEqual([]);
    expect(synced.pendingRef).toBeNull();
    expect(repo.git('rev-parse', 'agent-runner/C-1').trim()).toBe(prepared.baseSha);
    // Not one commit was replayed: the commit map is still empty.
    expect(existsSync(path.join(repo.root, '.agent-runner', 'sandboxes', 'C-1', 'commit-map.json'))).toBe(
      false,
    );
    // The same flood within the bound is replayed (the check counts exactly the new commits).
    const within = await syncBack({
      repoRoot: repo.root,
      taskId: 'C-1',
      scope: SCOPE,
      caps: { maxCommits: 12, maxTreeBytes: 2 * 1024 ** 3 },
    });
    expect(within.capped).toBeNull();
    expect(within.commits).toHaveLength(12);
  });

  it('refuses a head tree larger than maxTreeBytes before the worktree is touched', async () => {
    const { repo, prepared } = await preparedTask('T-1');
    // 8 MiB of zeros: a tiny object, a large file once checked out.
    const blob = runGit(
      prepared.sandboxRepoPath,
      ['-c', 'safe.directory=*', 'hash-object', '-w', '--stdin'],
      {
        input: Buffer.alloc(8 * 1024 ** 2),
      },
    ).trim();
    worker(prepared.sandboxRepoPath, 'update-index', '--add', '--cacheinfo', `100644,${blob},zeros.bin`);
    worker(prepared.sandboxRepoPath, 'commit', '-q', '-m', 'zeros');
    const synced = await syncBack({
      repoRoot: repo.root,
      taskId: 'T-1',
      scope: SCOPE,
      caps: { maxCommits: 500, maxTreeBytes: 1024 ** 2 },
    });
    expect(synced.capped?.cap).toBe('max_tree_bytes');
    expect(synced.capped?.actual).toBeGreaterThanOrEqual(8 * 1024 ** 2);
    expect(synced.capped?.limit).toBe(1024 ** 2);
    expect(existsSync(path.join(prepared.worktreePath, 'zeros.bin'))).toBe(false);
    expect(repo.git('rev-parse', 'agent-runner/T-1').trim()).toBe(prepared.baseSha);
    // The figure is the sum of the blob sizes of the whole tree.
    const sandboxRef = 'refs/agent-runner/sandbox/T-1';
    const others = repo
      .git('ls-tree', '-r', '-l', sandboxRef)
      .split('\n')
      .filter((line) => line && !line.endsWith('\tzeros.bin'))
      .reduce((sum, line) => sum + Number(line.split(/\s+/)[3]), 0);
    expect(others).toBeGreaterThan(0);
    expect(await treeBytes(repo.root, sandboxRef)).toBe(8 * 1024 ** 2 + others);
  });

  it('an aborted signal cuts the replay: it rejects and the branch does not move', async () => {
    const { repo, prepared } = await preparedTask('A-1');
    flood(prepared.sandboxRepoPath, 200);
    const controller = new AbortController();
    const cut = syncBack({ repoRoot: repo.root, taskId: 'A-1', scope: SCOPE, signal: controller.signal });
    setTimeout(() => controller.abort(), 300);
    const started = Date.now();
    const error = await cut.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AgentRunnerError);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(repo.git('rev-parse', 'agent-runner/A-1').trim()).toBe(prepared.baseSha);
  });

  it('an aborted signal stops a host git call before it starts', async () => {
    const repo = await createTempRepo({ 'README.md': '# demo\n' });
    const controller = new AbortController();
    controller.abort();
    const error = await hostGit(['rev-parse', 'HEAD'], { cwd: repo.root, signal: controller.signal }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(AgentRunnerError);
    expect((error as Error).message).toContain('was cut');
  });

  it('says which bound, its figure, what was found and the key to raise', () => {
    const words = limitMessage({ code: 'replay', cap: { cap: 'max_commits', limit: 500, actual: 2000 } });
    expect(words).toContain('2000 new commits');
    expect(words).toContain('sandbox.replay.maxCommits (500 new commits)');
    expect(words).toContain('agent-runner resume');
    expect(
      limitMessage({
        code: 'replay',
        cap: { cap: 'max_tree_bytes', limit: 1024 ** 2, actual: 3 * 1024 ** 2 },
      }),
    ).toContain('a tree of 3.0 MiB (3145728 bytes), over sandbox.replay.maxTreeBytes (a tree of 1.0 MiB');
  });
});
