/**
 * The descriptor pass that applies ownership plans (src/workspace/scope/ownership-pass.ts): a step is applied to the
 * entry the listing saw or not at all. A file swapped for a symlink to a host file, or a directory swapped for
 * a link to a host directory, between the listing and the pass is skipped and reported, and never followed;
 * no mode the pass sets has a setuid or setgid bit. The live race is shown first against a plain path-based
 * chmod (what the pass replaced), which the swapper wins.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { OwnershipEntry } from '../../src/core/ports.js';
import { applyOwnershipPass, ownershipPassScript } from '../../src/workspace/scope/ownership-pass.js';
import { taskLayout } from '../../src/workspace/layout.js';
import { giveBackPlan, listEntries, planOwnership } from '../../src/workspace/scope/permissions.js';
import { removeTaskSandbox } from '../../src/workspace/sandbox-repo/remove-task-sandbox.js';
import { compileScope } from '../../src/workspace/scope/scope.js';

const isRoot = process.getuid?.() === 0;

/** A sandbox directory and, outside it, a host directory with a canary file (mode 0600). */
function scene(): { sandbox: string; hostDir: string; canary: string } {
  const base = fs.mkdtempSync(path.join(tmpdir(), 'ar-ownership-pass-'));
  onTestFinished(() => fs.rmSync(base, { recursive: true, force: true }));
  const sandbox = path.join(base, 'sandbox');
  const hostDir = path.join(base, 'host');
  fs.mkdirSync(sandbox);
  fs.mkdirSync(hostDir);
  const canary = path.join(hostDir, 'canary');
  fs.writeFileSync(canary, 'host\n');
  fs.chmodSync(canary, 0o600);
  return { sandbox, hostDir, canary };
}

function stepFor(root: string, relative: string, change: Partial<OwnershipEntry>): OwnershipEntry {
  const stats = fs.lstatSync(path.join(root, relative));
  return {
    path: relative,
    uid: stats.uid,
    gid: stats.gid,
    mode: null,
    kind: stats.isDirectory() ? 'd' : stats.isSymbolicLink() ? 'l' : 'f',
    ino: stats.ino,
    ...change,
  };
}

const modeOf = (file: string) => fs.lstatSync(file).mode & 0o7777;

describe('ownership pass through descriptors', () => {
  it('applies modes (and owners, as root) to the entries the listing saw, directories included', () => {
    const { sandbox } = scene();
    fs.mkdirSync(path.join(sandbox, 'docs'));
    fs.writeFileSync(path.join(sandbox, 'docs', 'guide.md'), 'x');
    const steps = [
      stepFor(sandbox, 'docs/guide.md', { mode: 0o444, ...(isRoot ? { uid: 10002, gid: 10002 } : {}) }),
      stepFor(sandbox, 'docs', { mode: 0o1777 }),
      stepFor(sandbox, '.', { mode: 0o755 }),
    ];
    const report = applyOwnershipPass(fs, sandbox, steps, { chown: isRoot });
    expect(report).toEqual({ applied: 3, skippedCount: 0, skipped: [] });
    expect(modeOf(path.join(sandbox, 'docs', 'guide.md'))).toBe(0o444);
    expect(modeOf(path.join(sandbox, 'docs'))).toBe(0o1777);
    if (isRoot) expect(fs.lstatSync(path.join(sandbox, 'docs', 'guide.md')).uid).toBe(10002);
  });

  it('skips and reports a file swapped for a symlink to a host file after the listing; the host file is untouched', () => {
    const { sandbox, canary } = scene();
    fs.writeFileSync(path.join(sandbox, 'tool'), 'x');
    const step = stepFor(sandbox, 'tool', { mode: 0o755, ...(isRoot ? { uid: 10001, gid: 10001 } : {}) });
    // Plain chmod by path, after the same swap, changes the host file: the attack the pass must stop.
    fs.rmSync(path.join(sandbox, 'tool'));
    fs.symlinkSync(canary, path.join(sandbox, 'tool'));
    const before = fs.statSync(canary);
    const report = applyOwnershipPass(fs, sandbox, [step], { chown: isRoot });
    expect(report).toEqual({ applied: 0, skippedCount: 1, skipped: [{ path: 'tool', reason: 'changed' }] });
    expect(fs.statSync(canary)).toMatchObject({ mode: before.mode, uid: before.uid, gid: before.gid });
    fs.chmodSync(path.join(sandbox, 'tool'), 0o755);
    expect(modeOf(canary)).toBe(0o755);
  });

  it('never walks through a directory swapped for a link to a host directory, nor onto a replaced file', () => {
    const { sandbox, hostDir, canary } = scene();
    fs.mkdirSync(path.join(sandbox, 'sub'));
    fs.writeFileSync(path.join(sandbox, 'sub', 'canary'), 'x');
    fs.writeFileSync(path.join(sandbox, 'other'), 'x');
    const steps = [
      stepFor(sandbox, 'sub/canary', { mode: 0o777 }),
      stepFor(sandbox, 'other', { mode: 0o777 }),
    ];
    fs.rmSync(path.join(sandbox, 'sub'), { recursive: true });
    fs.symlinkSync(hostDir, path.join(sandbox, 'sub'));
    // Same name, another file (another inode): not the entry the listing saw. Written beside it and renamed
    // over it, so the new file's inode is allocated while the old one still exists: a remove-then-create can
    // be given the freed inode number back, and the swap would go unseen by the test, not by the pass.
    fs.writeFileSync(path.join(sandbox, 'other.new'), 'y');
    fs.renameSync(path.join(sandbox, 'other.new'), path.join(sandbox, 'other'));
    const report = applyOwnershipPass(fs, sandbox, steps, { chown: false });
    expect(report.applied).toBe(0);
    expect(report.skipped).toEqual([
      { path: 'other', reason: 'changed' },
      { path: 'sub/canary', reason: 'changed' },
    ]);
    expect(modeOf(canary)).toBe(0o600);
    expect(modeOf(path.join(sandbox, 'other'))).not.toBe(0o777);
  });

  it('never sets a setuid or setgid bit, whatever the plan says', () => {
    const { sandbox } = scene();
    fs.writeFileSync(path.join(sandbox, 'tool'), 'x');
    fs.mkdirSync(path.join(sandbox, 'dir'));
    const report = applyOwnershipPass(
      fs,
      sandbox,
      [stepFor(sandbox, 'tool', { mode: 0o6755 }), stepFor(sandbox, 'dir', { mode: 0o3777 })],
      { chown: false },
    );
    expect(report.applied).toBe(2);
    expect(modeOf(path.join(sandbox, 'tool'))).toBe(0o755);
    expect(modeOf(path.join(sandbox, 'dir'))).toBe(0o1777);
  });

  it('a symlink is lchown-ed as root, never chmod-ed, and its target is left alone', () => {
    const { sandbox, canary } = scene();
    fs.symlinkSync(canary, path.join(sandbox, 'link'));
    const step = stepFor(sandbox, 'link', { mode: 0o777, ...(isRoot ? { uid: 10001, gid: 10001 } : {}) });
    const before = fs.statSync(canary);
    expect(applyOwnershipPass(fs, sandbox, [step], { chown: isRoot }).applied).toBe(1);
    expect(fs.statSync(canary)).toMatchObject({ mode: before.mode, uid: before.uid });
    if (isRoot) expect(fs.lstatSync(path.join(sandbox, 'link')).uid).toBe(10001);
  });

  it('runs the same as a script in its own node process (the ownership helper container)', () => {
    const { sandbox, canary } = scene();
    fs.writeFileSync(path.join(sandbox, 'file'), 'x');
    fs.writeFileSync(path.join(sandbox, 'swapped'), 'x');
    const steps = [stepFor(sandbox, 'file', { mode: 0o640 }), stepFor(sandbox, 'swapped', { mode: 0o777 })];
    fs.rmSync(path.join(sandbox, 'swapped'));
    fs.symlinkSync(canary, path.join(sandbox, 'swapped'));
    const manifest = path.join(path.dirname(sandbox), 'plan.json');
    fs.writeFileSync(manifest, JSON.stringify({ entries: steps }));
    const child = spawnSync(process.execPath, ['-e', ownershipPassScript(sandbox), manifest], {
      encoding: 'utf8',
    });
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout.trim())).toEqual({
      applied: 1,
      skippedCount: 1,
      skipped: [{ path: 'swapped', reason: 'changed' }],
    });
    expect(modeOf(path.join(sandbox, 'file'))).toBe(0o640);
    expect(modeOf(canary)).toBe(0o600);
  });

  it('against a live swapper: a plain chmod by path changes the host file, the pass never does', async () => {
    const { sandbox, canary } = scene();
    const scope = compileScope({ exclude: [], read: [], write: [] });
    const ids = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    // A file without its write bit (so the plan adds it) ↔ a symlink to the host canary, as fast as bash can.
    const swapper = spawn(
      'bash',
      [
        '-c',
        'cd "$1"; while :; do echo x > f.new; chmod 555 f.new; mv -T f.new swap; ln -sfn "$2" l.new; mv -T l.new swap; done',
        'swapper',
        sandbox,
        canary,
      ],
      { stdio: 'ignore', detached: true },
    );
    onTestFinished(() => {
      try {
        process.kill(-(swapper.pid as number), 'SIGKILL');
      } catch {
        // already gone
      }
    });
    const plan = async () =>
      planOwnership(await listEntries(sandbox), { scope, worker: ids, guard: ids, owned: false }).plan.filter(
        (step) => step.path === 'swap',
      );
    // The attack: the listing's plan applied by path (chmod follows the link swapped in meanwhile).
    let deadline = Date.now() + 10_000;
    while (modeOf(canary) === 0o600 && Date.now() < deadline) {
      for (const step of await plan()) fs.chmodSync(path.join(sandbox, step.path), step.mode ?? 0o600);
    }
    expect(modeOf(canary), 'the path-based chmod never lost the race in 10 s').toBe(0o755);
    fs.chmodSync(canary, 0o600);
    // The defence: the same plans through descriptors, against the same swapper.
    let applied = 0;
    let skipped = 0;
    deadline = Date.now() + 2_000;
    while (Date.now() < deadline) {
      const report = applyOwnershipPass(fs, sandbox, await plan(), { chown: false });
      applied += report.applied;
      skipped += report.skippedCount;
      expect(modeOf(canary)).toBe(0o600);
    }
    expect(swapper.exitCode).toBeNull();
    // It did catch regular files (and applied to them) and swapped ones (and skipped them).
    expect(applied).toBeGreaterThan(0);
    expect(skipped).toBeGreaterThan(0);
  }, 30_000);
});

describe('removing a sandbox repository', () => {
  it('the give-back plan names entries the pass can reach, and gives every one back', async () => {
    const { sandbox } = scene();
    fs.mkdirSync(path.join(sandbox, 'dir'));
    fs.writeFileSync(path.join(sandbox, 'dir', 'file'), 'x');
    fs.chmodSync(path.join(sandbox, 'dir', 'file'), 0o444);
    fs.chmodSync(path.join(sandbox, 'dir'), 0o1777);
    const ids = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const plan = await giveBackPlan(sandbox, ids);
    expect(plan.map((step) => step.path).sort()).toEqual(['.', 'dir', 'dir/file']);
    expect(applyOwnershipPass(fs, sandbox, plan, { chown: isRoot })).toMatchObject({
      applied: 3,
      skippedCount: 0,
    });
    expect(modeOf(path.join(sandbox, 'dir'))).toBe(0o700);
    expect(modeOf(path.join(sandbox, 'dir', 'file'))).toBe(0o644);
  });

  it('deletes links, never what they point to (a host file, a host directory)', async () => {
    const { sandbox: repoRoot, hostDir, canary } = scene();
    const { sandboxRepoPath, sandboxDir } = taskLayout(repoRoot, 'rm-links');
    fs.mkdirSync(path.join(sandboxRepoPath, 'deep'), { recursive: true });
    fs.symlinkSync(canary, path.join(sandboxRepoPath, 'file-link'));
    fs.symlinkSync(hostDir, path.join(sandboxRepoPath, 'deep', 'dir-link'));
    await removeTaskSandbox(repoRoot, 'rm-links');
    expect(fs.existsSync(sandboxDir)).toBe(false);
    expect(fs.readFileSync(canary, 'utf8')).toBe('host\n');
    expect(fs.readdirSync(hostDir)).toEqual(['canary']);
  });
});
