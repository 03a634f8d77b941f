/**
 * Hard disk caps against one big write: the worker runs `fallocate -l 1G` into the sandbox repository's `.git`
 * (and `fallocate -l 512M` into CODEX_HOME) under caps of 64 MiB each. A watched cap cannot stop that: the
 * blocks are taken in one system call. With hard caps each directory is a loop-mounted file system of its own,
 * so the write fails in the sandbox (ENOSPC) and the host's disk holds no more than the cap and a few MiB.
 *
 * The probe is `du -x` of the repository's `.agent-runner` (allocated blocks: the image files, never the
 * file systems mounted in it), sampled while the runner runs; it first proves it sees a `fallocate` on a plain
 * host directory. After the task: NEEDS_REVIEW naming the cap, `--json` and the note say the cap was hard, the
 * files are back in the plain directories and the images gone, no container, no mount and no loop device of the
 * task is left. And a runner SIGKILLed mid-run leaves both mounted; `agent-runner gc` releases them (the files
 * back in the directories, no image, no mount, no loop device left).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  command,
  commandStarted,
  forceRemoveContainers,
  journalEvents,
  labelledContainers,
  runToEnd,
  setupFaultTask,
  startRunner,
  waitForJournalEvent,
} from '../support/faults-harness.js';
import { HOSTILE_YAML } from '../support/hostile-worker.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { assistantMessage } from '../support/scripted-responses-server.js';

const run = promisify(execFile);
const MiB = 1024 ** 2;
const CAP_MIB = 64;
/** What the task may add to the host's disk beyond its caps: its files, logs, the file systems' own metadata. */
const SLACK_MIB = 8;

const YAML = `${HOSTILE_YAML}sandbox:\n  disk:\n    repository: ${CAP_MIB}m\n    codexHome: ${CAP_MIB}m\n    hard: true\n`;

/** Allocated bytes under `dir` on its own file system only (`du -x`): a file system mounted below is not counted. */
async function du(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-s', '-x', '-B1', dir]).catch((error: { stdout?: string }) => ({
    stdout: error.stdout ?? '0',
  }));
  return Number(stdout.split(/\s/)[0]) || 0;
}

/** Every mount point and loop device backing file that names `fragment`. */
async function leftovers(fragment: string): Promise<string[]> {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((line) => line.includes(fragment));
  const loops = (await run('losetup', ['-a'])).stdout.split('\n').filter((line) => line.includes(fragment));
  return [...mounts, ...loops];
}

const root = (task: { root: string }) => path.join(task.root, '.agent-runner');

interface Layout {
  sandbox: string;
  run: string;
}

const hardSupported = process.getuid?.() === 0;

describe.skipIf(!hardSupported)('a hard disk cap against one fallocate far past it', () => {
  it('the probe sees a fallocate on a plain host directory', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ar-probe-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const before = await du(dir);
    await run('fallocate', ['-l', `${4 * CAP_MIB}M`, path.join(dir, 'x')]);
    expect((await du(dir)) - before).toBeGreaterThanOrEqual(4 * CAP_MIB * MiB);
  });

  it.each([
    {
      cap: 'repository',
      writer: 'fallocate -l 1G /workspace/.git/fill',
      marker: '"$CODEX_HOME/exit"',
      dir: (layout: Layout) => `${layout.sandbox}/repo`,
      other: (layout: Layout) => `${layout.run}/codex-home`,
      file: '.git/fill',
    },
    {
      cap: 'codexHome',
      writer: 'fallocate -l 512M "$CODEX_HOME/fill"',
      marker: '/workspace/exit',
      dir: (layout: Layout) => `${layout.run}/codex-home`,
      other: (layout: Layout) => `${layout.sandbox}/repo`,
      file: 'fill',
    },
    {
      cap: 'repository',
      writer: 'head -c 1G /dev/zero > /workspace/.git/fill',
      marker: null,
      dir: (layout: Layout) => `${layout.sandbox}/repo`,
      other: null,
      file: '.git/fill',
    },
  ])('$writer fails in the sandbox and takes no more than the cap', async (attack) => {
    const { cap, writer, marker, dir, other, file } = attack;
    const taskId = `sec-hardcap-${cap.toLowerCase()}-${randomUUID().slice(0, 6)}`;
    const task = await setupFaultTask(taskId, YAML);
    delete task.env.AGENT_RUNNER_NETWORK;
    task.chat.push(
      { reply: planReply(taskId, [{ id: 'AC-1', description: 'The requested change is committed.' }]) },
      { reply: runWorkerReply('Do the requested change and commit it.') },
      { reply: assessmentReply(true, ['AC-1'], 'Checked the facts.') },
    );
    // The exit status is kept in the other capped directory right after the one call (the sandbox's
    // processes are stopped once the cap is seen, before the worker could report it); the sleep waits for that.
    const script = `${writer}; echo "exit-$?" > ${marker ?? '/dev/null'}; sleep 30`;
    task.responses.enqueue(command(script), { kind: 'output', items: [assistantMessage('Done.')] });
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', taskId, '--json'], {
      cwd: task.root,
      env: task.env,
    });
    let peak = 0;
    let gone = false;
    void runner.exited.then(() => (gone = true));
    while (!gone) {
      peak = Math.max(peak, await du(root(task)));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const { code } = await runner.exited;
    const final = await du(root(task));
    console.log(
      `hard cap ${cap}: host disk use of .agent-runner peak ${(peak / MiB).toFixed(1)} MiB, final ${(final / MiB).toFixed(1)} MiB`,
    );
    // The write took no more of the host's disk than its cap: at the end the directory holds what the file
    // system held (a file of zeros as holes), and for the moment of the release both the image and the copy.
    expect(final, runner.stderr()).toBeLessThan((CAP_MIB + SLACK_MIB) * MiB);
    expect(peak, runner.stderr()).toBeLessThan((2 * CAP_MIB + SLACK_MIB) * MiB);
    // The write failed inside the sandbox: what it left is under the cap, and its exit status was not 0.
    const layout = {
      sandbox: path.join(root(task), 'sandboxes', taskId),
      run: path.join(root(task), 'runs', taskId),
    };
    // The files are back in the plain directories, the images gone.
    expect(existsSync(`${dir(layout)}.img`)).toBe(false);
    const written = statSync(path.join(dir(layout), file)).size;
    expect(written).toBeLessThan((CAP_MIB + SLACK_MIB) * MiB);
    if (other && marker) {
      const status = readFileSync(path.join(other(layout), 'exit'), 'utf8');
      expect(status.trim()).toMatch(/^exit-[1-9]/);
    }
    expect(journalEvents(task.root, taskId).at(-1)?.type).toBe('task_finished');
    // The task ended NEEDS_REVIEW on that cap, saying it was a hard one.
    const summary = JSON.parse(runner.stdout().trim().split('\n').at(-1) ?? '{}') as {
      state?: string;
      reason?: string;
      diskCaps?: Record<string, { kind: string }>;
    };
    expect(code, runner.stderr()).toBe(3);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.reason).toContain(`disk cap sandbox.disk.${cap} reached`);
    expect(summary.reason).toContain('filled its file system');
    expect(summary.diskCaps).toEqual({ repository: { kind: 'hard' }, codexHome: { kind: 'hard' } });
    const note = readFileSync(path.join(root(task), `task-${taskId}.md`), 'utf8');
    expect(note).toContain(`sandbox.disk.${cap}`);
    expect(note).toMatch(/\| Disk caps \| repository: hard .*CODEX_HOME: hard/);
    // Nothing of the task is left running or mounted.
    expect(await labelledContainers(taskId, task.root)).toEqual([]);
    expect(await leftovers(taskId)).toEqual([]);
  });

  it('gc releases the mounts of a runner killed mid-run: no mount, no loop device of the task left', async () => {
    const taskId = `sec-hardcap-gc-${randomUUID().slice(0, 6)}`;
    const task = await setupFaultTask(taskId, YAML);
    delete task.env.AGENT_RUNNER_NETWORK;
    onTestFinished(async () => {
      await forceRemoveContainers(taskId, task.root);
      // Whatever a failed assertion left mounted goes too (lazily: the loop devices detach with it).
      for (const line of await leftovers(taskId))
        if (!line.startsWith('/dev/loop'))
          await run('umount', ['-l', line.split(' ')[4]!]).catch(() => undefined);
    });
    task.chat.push(
      { reply: planReply(taskId, [{ id: 'AC-1', description: 'The requested change is committed.' }]) },
      { reply: runWorkerReply('Do the requested change and commit it.') },
    );
    task.responses.enqueue(command('sleep 600'));
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', taskId, '--json'], {
      cwd: task.root,
      env: task.env,
    });
    await waitForJournalEvent(task.root, taskId, commandStarted('sleep 600'), runner);
    runner.child.kill('SIGKILL');
    expect((await runner.exited).signal).toBe('SIGKILL');
    // The probe sees what a SIGKILL leaves (no exit hook ran): both file systems mounted, each on a loop device.
    const left = await leftovers(taskId);
    const loops = left.filter((line) => line.startsWith('/dev/loop'));
    expect(left.length - loops.length, left.join('\n')).toBe(2);
    expect(loops, left.join('\n')).toHaveLength(2);

    const gc = await runToEnd(['gc'], { cwd: task.root, env: task.env });
    expect(gc.code, gc.stderr).toBe(0);
    const repo = path.join(root(task), 'sandboxes', taskId, 'repo');
    expect(gc.stdout).toContain(`released ${repo}`);
    expect(await leftovers(taskId)).toEqual([]);
    // The files are back in the plain directory (the sandbox repository's git directory), the images gone.
    expect(existsSync(path.join(repo, '.git', 'HEAD'))).toBe(true);
    expect(existsSync(`${repo}.img`)).toBe(false);
    expect(existsSync(path.join(root(task), 'runs', taskId, 'codex-home.img'))).toBe(false);
  });
});
