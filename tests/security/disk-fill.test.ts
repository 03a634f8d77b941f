/**
 * Filling the host's disk through the bind mounts: the worker writes as fast as it can into the sandbox
 * repository's `.git` and into CODEX_HOME, both host directories without a quota. With small caps in the
 * test's config, the probe first sees (with plain `du` on the host, sampled while the attack runs) the
 * directory grow past its cap, then proves the run was stopped well before the writer's target, the task
 * ended NEEDS_REVIEW naming the cap, the note and the journal were written, no container is left, and the
 * runner's own memory and file descriptors stayed bounded meanwhile (/proc of the CLI process).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  command,
  journalEvents,
  labelledContainers,
  setupFaultTask,
  startRunner,
  type RunnerProcess,
} from '../support/faults-harness.js';
import { HOSTILE_YAML } from '../support/hostile-worker.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { assistantMessage } from '../support/scripted-responses-server.js';

const run = promisify(execFile);
const MiB = 1024 ** 2;
const CAP_MIB = 64;
/** What the writer aims at: 16 times the cap. */
const TARGET_FILES = 256;
const FILE_MIB = 4;
/** The runner's bounds during the attack (README, "Disk caps"; docs/threat-model.md). */
const MAX_RSS_MIB = 400;
const MAX_FDS = 256;

/** The watched caps (the fallback where hard ones cannot be made), forced by `hard: false`. */
const YAML = `${HOSTILE_YAML}sandbox:\n  disk:\n    repository: ${CAP_MIB}m\n    codexHome: ${CAP_MIB}m\n    hard: false\n`;

/** Allocated bytes under `dir` as plain `du` counts them (0 when it does not exist yet). */
async function du(dir: string): Promise<number> {
  if (!existsSync(dir)) return 0;
  const { stdout } = await run('du', ['-s', '-B1', dir]).catch((error: { stdout?: string }) => ({
    stdout: error.stdout ?? '0',
  }));
  return Number(stdout.split(/\s/)[0]) || 0;
}

interface Samples {
  maxBytes: number;
  maxRssKiB: number;
  maxFds: number;
  readings: number;
}

/** Samples the directory's size and the runner's RSS and open descriptors every 100 ms until it exits. */
function sample(runner: RunnerProcess, dir: string): Promise<Samples> {
  const samples: Samples = { maxBytes: 0, maxRssKiB: 0, maxFds: 0, readings: 0 };
  let gone = false;
  void runner.exited.then(() => (gone = true));
  return (async () => {
    while (!gone) {
      samples.maxBytes = Math.max(samples.maxBytes, await du(dir));
      try {
        const status = readFileSync(`/proc/${runner.pid}/status`, 'utf8');
        const rss = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
        samples.maxRssKiB = Math.max(samples.maxRssKiB, rss);
        samples.maxFds = Math.max(samples.maxFds, readdirSync(`/proc/${runner.pid}/fd`).length);
        samples.readings += 1;
      } catch {
        // The process ended between two readings.
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return samples;
  })();
}

/** A worker run whose one command writes TARGET_FILES files of FILE_MIB MiB into `target` (a shell path). */
async function fillAttack(label: string, target: string, watched: (root: string, taskId: string) => string) {
  const taskId = `sec-disk-${label}-${randomUUID().slice(0, 6)}`;
  const task = await setupFaultTask(taskId, YAML);
  delete task.env.AGENT_RUNNER_NETWORK;
  task.chat.push(
    { reply: planReply(taskId, [{ id: 'AC-1', description: 'The requested change is committed.' }]) },
    { reply: runWorkerReply('Do the requested change and commit it.') },
    { reply: assessmentReply(true, ['AC-1'], 'Checked the facts.') },
  );
  const writer = [
    `mkdir -p ${target}`,
    `for i in $(seq 1 ${TARGET_FILES}); do head -c ${FILE_MIB * MiB} /dev/zero > ${target}/junk-$i || break; done`,
    // The marker is computed, so the command's own text (in the journal) does not hold it.
    `echo "wrote-all-$((${TARGET_FILES} * 1))"`,
  ].join('\n');
  task.responses.enqueue(command(writer), { kind: 'output', items: [assistantMessage('Done.')] });
  const started = Date.now();
  const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', taskId, '--json'], {
    cwd: task.root,
    env: task.env,
  });
  const samples = sample(runner, watched(task.root, taskId));
  const { code } = await runner.exited;
  const seen = await samples;
  const finalBytes = await du(watched(task.root, taskId));
  const summary = JSON.parse(runner.stdout().trim().split('\n').at(-1) ?? '{}') as {
    state?: string;
    reason?: string;
    exitCode?: number;
    notePath?: string;
    diskCaps?: unknown;
  };
  console.log(
    `disk-fill ${label}: ${Math.round((Date.now() - started) / 1000)} s, peak ${(seen.maxBytes / MiB).toFixed(1)} MiB, ` +
      `final ${(finalBytes / MiB).toFixed(1)} MiB, runner RSS ${(seen.maxRssKiB / 1024).toFixed(0)} MiB, ` +
      `fds ${seen.maxFds} (${seen.readings} readings)`,
  );
  return { task, taskId, code, stderr: runner.stderr(), seen, finalBytes, summary };
}

describe('filling the host disk through the sandbox mounts', () => {
  it.each([
    {
      label: 'repo',
      cap: 'repository',
      target: '/workspace/.git/objects/fill',
      watched: (root: string, taskId: string) =>
        path.join(root, '.agent-runner', 'sandboxes', taskId, 'repo', '.git', 'objects', 'fill'),
    },
    {
      label: 'codexhome',
      cap: 'codexHome',
      target: '"$CODEX_HOME/fill"',
      watched: (root: string, taskId: string) =>
        path.join(root, '.agent-runner', 'runs', taskId, 'codex-home', 'fill'),
    },
  ])('writes into $cap are stopped at sandbox.disk.$cap', async ({ label, cap, target, watched }) => {
    const attack = await fillAttack(label, target, watched);
    // The attack ran: plain du on the host saw the directory grow past the cap while the worker wrote.
    expect(attack.seen.maxBytes, attack.stderr).toBeGreaterThan(CAP_MIB * MiB);
    // It was stopped: the writer never reached its target (16 times the cap), nor said it had.
    expect(attack.finalBytes).toBeLessThan((TARGET_FILES * FILE_MIB * MiB) / 2);
    const events = journalEvents(attack.task.root, attack.taskId);
    expect(JSON.stringify(events)).not.toContain(`wrote-all-${TARGET_FILES}`);
    // The task ended NEEDS_REVIEW on that cap, exit 3, with its figures and the fix.
    expect(attack.code, attack.stderr).toBe(3);
    expect(attack.summary.state).toBe('NEEDS_REVIEW');
    expect(attack.summary.reason).toContain(`disk cap sandbox.disk.${cap} reached`);
    expect(attack.summary.reason).toContain(`over its cap of ${CAP_MIB} MiB`);
    expect(attack.summary.reason).toContain(`raise sandbox.disk.${cap}`);
    // The fallback is said: both caps watched, and why.
    const fallback = { kind: 'watched', reason: 'sandbox.disk.hard is false in the configuration' };
    expect(attack.summary.diskCaps).toEqual({ repository: fallback, codexHome: fallback });
    // The runner's bookkeeping: journal to the end, and the note, which says why.
    expect(events.at(-1)?.type).toBe('task_finished');
    expect(events.some((event) => event.type === 'note_written')).toBe(true);
    const note = readFileSync(
      path.join(attack.task.root, '.agent-runner', `task-${attack.taskId}.md`),
      'utf8',
    );
    expect(note).toContain(`sandbox.disk.${cap}`);
    // Nothing of the junk was copied into the person's repository as "uncommitted work".
    expect(events.some((event) => event.type === 'preserved')).toBe(false);
    // No container of this task is left.
    expect(await labelledContainers(attack.taskId, attack.task.root)).toEqual([]);
    // The runner itself stayed bounded while the worker wrote.
    expect(attack.seen.readings).toBeGreaterThan(0);
    expect(attack.seen.maxRssKiB).toBeLessThan(MAX_RSS_MIB * 1024);
    expect(attack.seen.maxFds).toBeLessThan(MAX_FDS);
  });
});
