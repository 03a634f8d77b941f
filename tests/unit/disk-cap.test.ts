/**
 * The disk caps of a sandbox: the du-like walk (allocated blocks, hard links once, links never followed,
 * bounded), the watch (growth since set-up, the stop called once, a late write caught by `check`), and the
 * loop (a cap reached ends the task NEEDS_REVIEW naming it, without copying the uncommitted files anywhere).
 * Real files in a temporary directory; the loop with the core's honest fakes.
 */
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { formatSize } from '../../src/config/units.js';
import { diskCapMessage, limitMessage, type DiskCapReached } from '../../src/core/limits.js';
import { TaskRunner, type TaskRecord } from '../../src/core/task-runner.js';
import type { StampedEvent } from '../../src/core/events.js';
import { measureDiskUsage } from '../../src/sandbox/disk-usage.js';
import { DiskWatch } from '../../src/sandbox/disk-watch.js';
import {
  FakeSandboxes,
  FakeWorker,
  ScriptedMetaAgent,
  fakeRepo,
  testRunnerDeps,
  testRunnerOptions,
} from '../support/core-fakes.js';

const MiB = 1024 ** 2;
const dirs: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-disk-cap-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
/** Writes `mib` MiB of real (allocated) data. */
const fill = (file: string, mib: number) => writeFileSync(file, Buffer.alloc(mib * MiB, 1));

describe('sandbox.disk in agent-runner.yaml', () => {
  it('defaults to 4 GiB for the repository and 1 GiB for CODEX_HOME, hard where the machine can, and takes sizes like sandbox.memory', () => {
    expect(validateConfig([{ source: 'test', values: {} }]).sandbox.disk).toEqual({
      repository: 4 * 1024 ** 3,
      codexHome: 1024 ** 3,
      hard: true,
    });
    const config = validateConfig([{ source: 'test', values: { sandbox: { disk: { repository: '64m' } } } }]);
    expect(config.sandbox.disk).toEqual({ repository: 64 * MiB, codexHome: 1024 ** 3, hard: true });
    expect(() =>
      validateConfig([{ source: 'agent-runner.yaml', values: { sandbox: { disk: { codexHome: 'lots' } } } }]),
    ).toThrow('sandbox.disk.codexHome: expected a size like 1g');
    expect([formatSize(512), formatSize(64 * MiB), formatSize(1.5 * 1024 * MiB)]).toEqual([
      '512 bytes',
      '64 MiB',
      '1.5 GiB',
    ]);
  });
});

describe('measuring a worker-writable directory', () => {
  it('counts allocated blocks, each hard-linked file once, a link and not its target, a sparse file as empty', async () => {
    const root = scratch();
    const outside = scratch();
    mkdirSync(path.join(root, 'a', 'b'), { recursive: true });
    fill(path.join(root, 'a', 'b', 'data'), 3);
    for (let i = 0; i < 20; i += 1) linkSync(path.join(root, 'a', 'b', 'data'), path.join(root, `hard-${i}`));
    fill(path.join(outside, 'big'), 8);
    symlinkSync(path.join(outside, 'big'), path.join(root, 'link'));
    symlinkSync(outside, path.join(root, 'dir-link'));
    writeFileSync(path.join(root, 'sparse'), '');
    truncateSync(path.join(root, 'sparse'), 1024 * MiB);
    const usage = await measureDiskUsage(root);
    expect(usage.complete).toBe(true);
    // 3 MiB of data plus a few blocks of directories and links: not 63 MiB, not 11, not 1 GiB.
    expect(usage.bytes).toBeGreaterThanOrEqual(3 * MiB);
    expect(usage.bytes).toBeLessThan(3.5 * MiB);
  });

  it('stops at its entry bound and says the count is a lower bound', async () => {
    const root = scratch();
    for (let i = 0; i < 50; i += 1) writeFileSync(path.join(root, `f${i}`), 'x');
    const usage = await measureDiskUsage(root, { budgetMs: 5_000, maxEntries: 10 });
    expect(usage.complete).toBe(false);
    expect(usage.entries).toBeLessThan(50);
    expect(await measureDiskUsage(path.join(root, 'missing'))).toEqual({
      bytes: 0,
      entries: 0,
      complete: true,
    });
  });
});

describe('the disk watch', () => {
  it('counts growth since it started, stops the sandbox once over the cap, and keeps the figures', async () => {
    const repo = scratch();
    const home = scratch();
    fill(path.join(repo, 'already-there'), 6);
    const stops: DiskCapReached[] = [];
    const watch = new DiskWatch({
      directories: [
        { cap: 'repository', path: repo, limitBytes: 4 * MiB },
        { cap: 'codexHome', path: home, limitBytes: 4 * MiB },
      ],
      onExceeded: async (reached) => void stops.push(reached),
      intervalMs: 50,
      pollMs: 10,
    });
    await watch.start();
    try {
      // The files the task started with do not count.
      expect(await watch.check()).toBeNull();
      fill(path.join(home, 'junk-1'), 2);
      expect(await watch.check()).toBeNull();
      fill(path.join(home, 'junk-2'), 3);
      for (let i = 0; i < 100 && stops.length === 0; i += 1) await new Promise((r) => setTimeout(r, 20));
      expect(stops).toHaveLength(1);
      expect(stops[0]).toMatchObject({ code: 'disk', cap: 'codexHome', limitBytes: 4 * MiB, path: home });
      expect(stops[0]!.grewBytes).toBeGreaterThan(4 * MiB);
      // Once is enough: the watch has stopped and keeps what it saw.
      fill(path.join(repo, 'more'), 8);
      expect(await watch.check()).toEqual(stops[0]);
      expect(stops).toHaveLength(1);
    } finally {
      watch.stop();
    }
  });

  it('leaves out a directory it cannot measure whole at the start, rather than compare parts', async () => {
    const repo = scratch();
    for (let i = 0; i < 40; i += 1) writeFileSync(path.join(repo, `f${i}`), 'x');
    const watch = new DiskWatch({
      directories: [{ cap: 'repository', path: repo, limitBytes: 1 * MiB }],
      onExceeded: async () => undefined,
      bounds: { budgetMs: 5_000, maxEntries: 10 },
    });
    await watch.start();
    fill(path.join(repo, 'big'), 2);
    expect(await watch.check()).toBeNull();
    watch.stop();
  });

  it('a write that ends between two looks is caught by check()', async () => {
    const repo = scratch();
    const stops: DiskCapReached[] = [];
    const watch = new DiskWatch({
      directories: [{ cap: 'repository', path: repo, limitBytes: 2 * MiB }],
      onExceeded: async (reached) => void stops.push(reached),
      intervalMs: 3_600_000,
      pollMs: 3_600_000,
    });
    await watch.start();
    try {
      fill(path.join(repo, 'burst'), 3);
      const reached = await watch.check();
      expect(reached).toMatchObject({ cap: 'repository', limitBytes: 2 * MiB });
      expect(stops).toEqual([reached]);
    } finally {
      watch.stop();
    }
  });
});

describe('a disk cap in the loop', () => {
  const reached: DiskCapReached = {
    code: 'disk',
    cap: 'repository',
    limitBytes: 64 * MiB,
    grewBytes: 70 * MiB,
    path: '/repo/.agent-runner/sandboxes/T-1/repo',
  };

  it('says which cap, its figures and the fix', () => {
    expect(limitMessage(reached)).toBe(diskCapMessage(reached));
    expect(diskCapMessage(reached)).toBe(
      'disk cap sandbox.disk.repository reached: the sandbox repository (work tree and .git) grew by 70 MiB, ' +
        "over its cap of 64 MiB, so the sandbox's processes were stopped at once (uncommitted files stay in " +
        '/repo/.agent-runner/sandboxes/T-1/repo, not copied to your repository). Find what wrote so much there, ' +
        'or raise sandbox.disk.repository in agent-runner.yaml',
    );
  });

  it('ends the task NEEDS_REVIEW on the cap after the run it stopped, commits back, nothing preserved', async () => {
    class CappedSandboxes extends FakeSandboxes {
      cap: DiskCapReached | null = null;
      async checkDisk(): Promise<DiskCapReached | null> {
        return this.cap;
      }
    }
    const sandboxes = new CappedSandboxes();
    const repo = fakeRepo();
    const worker = new FakeWorker(repo, [
      (state) => {
        state.commits.push({ sha: 'c1', subject: 'half the work' });
        state.uncommitted.push('junk-1', 'junk-2');
        sandboxes.cap = reached;
        return { exitCode: 137, failed: true };
      },
    ]);
    const meta = new ScriptedMetaAgent([
      {
        kind: 'plan',
        plan: {
          title: 'T',
          acceptanceCriteria: [{ id: 'AC1', description: 'd', type: 'functional', critical: true }],
        },
      },
      {
        kind: 'decide',
        decision: {
          action: 'run_worker',
          reason: 'go',
          usedPatterns: [],
          workerCall: { workerType: 'codex', mode: 'exec', prompt: 'work' },
        },
      },
    ]);
    const events: StampedEvent[] = [];
    const notes: TaskRecord[] = [];
    const runner = new TaskRunner(
      await testRunnerOptions({ prd: '# T\n\nDo it.' }),
      testRunnerDeps(repo, { meta, sandboxes, worker }, { notes, events }),
    );
    const summary = await runner.run();
    expect(summary).toMatchObject({ state: 'NEEDS_REVIEW', exitCode: 3, reason: diskCapMessage(reached) });
    // No assessment, no check after the stop; the run's commit came back; the junk was not preserved.
    expect(meta.calls.map((call) => call.kind)).toEqual(['plan', 'decide']);
    expect(events.some((event) => event.type === 'dod')).toBe(false);
    expect(events.some((event) => event.type === 'facts')).toBe(true);
    expect(repo.preserved).toEqual([]);
    expect(notes).toHaveLength(1);
    expect(sandboxes.live.size).toBe(0);
  });
});
