/**
 * Every resource of the replay bounded. The worker (the real codex in the real sandbox) floods its branch:
 * thousands of commits made in a second with `git fast-import`, or a 200 MiB file of zeros that packs into a few
 * hundred KiB. Each attack is first seen on the host (the fetched sandbox ref holds the commits, the blob's size
 * is read from its object header), then the defence: the task ends NEEDS_REVIEW naming the bound and its key,
 * the person's branch and worktree hold none of it, the note is written, no container is left. A SIGTERM while a
 * long replay runs ends the runner within seconds (exit 130, the note written), its memory and descriptors
 * sampled all along.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  journalEvents,
  labelledContainers,
  readNote,
  setupFaultTask,
  startRunner,
  waitForJournalEvent,
  type JournalEvent,
} from '../support/faults-harness.js';
import { HOSTILE_YAML } from '../support/hostile-worker.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { assistantMessage, commandCall, type ScriptedReply } from '../support/scripted-responses-server.js';
import { git } from '../support/task-repo.js';

/** A unique prefix for this file's tasks (other suites run on the same engine at the same time). */
const PREFIX = `sec-replay-${randomUUID().slice(0, 4)}`;

/**
 * `count` empty commits on the checked-out branch in one `git fast-import` (about a second for thousands): the
 * tree stays the same, so the sandbox's status stays clean.
 */
function commitFlood(count: number): string {
  return [
    'set -e',
    'b=$(git symbolic-ref HEAD)',
    'h=$(git rev-parse HEAD)',
    `for i in $(seq 1 ${count}); do`,
    `  printf 'commit %s\\ncommitter w <w@example.com> 1700000000 +0000\\ndata 6\\nflood\\n' "$b"`,
    '  [ "$i" = 1 ] && printf "from %s\\n" "$h"',
    "  printf '\\n'",
    'done | git fast-import --quiet',
    'echo "commits: $(git rev-list --count HEAD)"',
  ].join('\n');
}

/** A commit holding a 200 MiB file of zeros that is never written in the sandbox (its pack is tiny). */
const ZEROS_BYTES = 200 * 1024 * 1024;
const ZEROS_COMMIT = [
  'set -e',
  `blob=$(head -c ${ZEROS_BYTES} /dev/zero | git hash-object -w --stdin)`,
  'tree=$( { git ls-tree HEAD; printf "100644 blob %s\\tzeros.bin\\n" "$blob"; } | git mktree)',
  'commit=$(git commit-tree "$tree" -p HEAD -m "Add zeros")',
  'git update-ref "$(git symbolic-ref HEAD)" "$commit"',
  // The index agrees with the new head and the missing file is no change: the sandbox looks clean.
  'git update-index --add --cacheinfo 100644,"$blob",zeros.bin',
  'git update-index --skip-worktree zeros.bin',
  'du -sh .git/objects',
].join('\n');

/**
 * A codex turn that runs `cmd` and waits up to 30 s for it (codex's default is about 10 s, after which the turn
 * goes on and the command ends with the run: a loaded machine needs more for the floods here).
 */
function longCommand(cmd: string): ScriptedReply {
  const call = commandCall(cmd);
  return { kind: 'output', items: [{ ...call, arguments: JSON.stringify({ cmd, yield_time_ms: 30_000 }) }] };
}

/** The suite's hostile task (plan, one worker run of `cmd`, assessment), started as a child process. */
async function startFlood(taskId: string, yaml: string, cmd: string) {
  const task = await setupFaultTask(taskId, yaml);
  // The suite attacks the default network policy (gateway-only).
  delete task.env.AGENT_RUNNER_NETWORK;
  task.chat.push(
    { reply: planReply(taskId, [{ id: 'AC-1', description: 'The requested change is committed.' }]) },
    { reply: runWorkerReply('Do the requested change and commit it.') },
    { reply: assessmentReply(true, ['AC-1'], 'Checked the facts.') },
  );
  task.responses.enqueue(longCommand(cmd), { kind: 'output', items: [assistantMessage('Done.')] });
  const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', taskId, '--json'], {
    cwd: task.root,
    env: task.env,
  });
  return { task, runner };
}

/** As {@link startFlood}, to the end: the exit code, the `--json` summary and stderr. */
async function runFlood(taskId: string, yaml: string, cmd: string) {
  const { task, runner } = await startFlood(taskId, yaml, cmd);
  const { code } = await runner.exited;
  const summary = JSON.parse(runner.stdout().trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
  return { root: task.root, code, summary, stderr: runner.stderr() };
}

const fetchedRef = (taskId: string) => `refs/agent-runner/sandbox/${taskId}`;

/** What the worker's commands printed (for the message of a failed expectation). */
function workerOutput(root: string, taskId: string): string {
  const records = journalEvents(root, taskId).filter((event) => event.type === 'run_recorded');
  return JSON.stringify((records.at(-1)?.record as { commands?: unknown } | undefined)?.commands ?? null);
}

/** The time between two journal events of the task, in ms. */
function between(events: JournalEvent[], from: string, to: string): number {
  const at = (type: string) => Date.parse(String(events.find((event) => event.type === type)?.at));
  return at(to) - at(from);
}

describe('a worker that floods the replay', () => {
  it('thousands of commits in a second: NEEDS_REVIEW naming sandbox.replay.maxCommits, nothing replayed', async () => {
    const taskId = `${PREFIX}-commits`;
    const yaml = `${HOSTILE_YAML}sandbox:\n  replay:\n    maxCommits: 100\n`;
    const run = await runFlood(taskId, yaml, commitFlood(3000));
    const { root, summary } = run;
    const branch = `agent-runner/${taskId}`;
    // The attack ran: the commits reached the host (the fetch of the sandbox's branch holds all of them).
    const fetched = Number(git(root, 'rev-list', '--count', fetchedRef(taskId)));
    expect(fetched, workerOutput(root, taskId)).toBeGreaterThan(3000);

    const reason = String(summary.reason);
    expect(run.code, run.stderr.slice(-2000)).toBe(3);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(reason).toContain('sandbox.replay.maxCommits');
    expect(reason).toContain('3000 new commits');
    expect(reason).toContain('(100 new commits)');
    // Nothing of it reached the person's branch or worktree.
    expect(git(root, 'rev-parse', branch)).toBe(git(root, 'rev-parse', 'main'));
    const worktree = path.join(root, '.agent-runner', 'worktrees', taskId);
    expect(git(worktree, 'rev-parse', 'HEAD')).toBe(git(root, 'rev-parse', 'main'));
    // Quickly: the validation that refused it took seconds, not the minutes a replay of 3,000 commits takes.
    const events = journalEvents(root, taskId);
    expect(between(events, 'worker_finished', 'task_finished')).toBeLessThan(30_000);
    expect(readNote(root, taskId)).toContain('sandbox.replay.maxCommits');
    expect(await labelledContainers(taskId, root)).toEqual([]);
  });

  it('a small pack that expands into 200 MiB: the person’s worktree is not filled, sandbox.replay.maxTreeBytes is named', async () => {
    const taskId = `${PREFIX}-tree`;
    const yaml = `${HOSTILE_YAML}sandbox:\n  replay:\n    maxTreeBytes: 50m\n`;
    const run = await runFlood(taskId, yaml, ZEROS_COMMIT);
    const { root, summary } = run;
    const branch = `agent-runner/${taskId}`;
    // The attack ran: the fetched head holds the 200 MiB blob (its size read from the object's header).
    const names = git(root, 'ls-tree', '--name-only', fetchedRef(taskId));
    expect(names, workerOutput(root, taskId)).toContain('zeros.bin');
    expect(git(root, 'cat-file', '-s', `${fetchedRef(taskId)}:zeros.bin`)).toBe(String(ZEROS_BYTES));

    const reason = String(summary.reason);
    expect(run.code, run.stderr.slice(-2000)).toBe(3);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(reason).toContain('sandbox.replay.maxTreeBytes');
    expect(reason).toContain('a tree of 200.0 MiB');
    expect(reason).toContain('(a tree of 50.0 MiB');
    // The person's worktree and branch hold nothing of it.
    const worktree = path.join(root, '.agent-runner', 'worktrees', taskId);
    expect(readdirSync(worktree)).not.toContain('zeros.bin');
    expect(git(root, 'rev-parse', branch)).toBe(git(root, 'rev-parse', 'main'));
    expect(readNote(root, taskId)).toContain('sandbox.replay.maxTreeBytes');
    expect(await labelledContainers(taskId, root)).toEqual([]);
  });

  it('SIGTERM while a long replay runs: exit 130 within seconds, the note written, memory and descriptors bounded', async () => {
    const taskId = `${PREFIX}-sigterm`;
    const yaml = `${HOSTILE_YAML}sandbox:\n  replay:\n    maxCommits: 100000\n`;
    const { task, runner } = await startFlood(taskId, yaml, commitFlood(3000));
    const samples = sampleProcess(runner.pid);
    await waitForJournalEvent(
      task.root,
      taskId,
      (event) => event.type === 'transition' && event.to === 'VALIDATING',
      runner,
      180_000,
    );
    // The replay runs: the commits are fetched (the ref holds them), and it is a few seconds in, far from done.
    const fetchedAll = () => Number(tryGit(task.root, 'rev-list', '--count', fetchedRef(taskId)) ?? 0) > 3000;
    for (let waited = 0; !fetchedAll() && waited < 120_000; waited += 250)
      await new Promise((resolve) => setTimeout(resolve, 250));
    expect(fetchedAll(), `${workerOutput(task.root, taskId)}\n${runner.stderr().slice(-2000)}`).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const signalledAt = Date.now();
    runner.child.kill('SIGTERM');
    const { code } = await runner.exited;
    const tookMs = Date.now() - signalledAt;
    samples.stop();

    expect(code, runner.stderr().slice(-3000)).toBe(130);
    expect(tookMs).toBeLessThan(20_000);
    // It was cut: the branch does not hold the 3,000 commits.
    expect(git(task.root, 'rev-list', '--count', `main..agent-runner/${taskId}`)).toBe('0');
    const summary = JSON.parse(runner.stdout().trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(readNote(task.root, taskId)).toContain('interrupted');
    expect(await labelledContainers(taskId, task.root)).toEqual([]);
    // Bounds of the runner during the attack (docs/threat-model.md).
    expect(samples.count()).toBeGreaterThan(5);
    expect(samples.maxRssBytes()).toBeLessThan(600 * 1024 ** 2);
    expect(samples.maxFds()).toBeLessThan(256);
  });
});

/** git's output, or null when it fails (a ref that is not there yet). */
function tryGit(cwd: string, ...args: string[]): string | null {
  try {
    return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** Samples a process's resident memory and open descriptors every 200 ms until stopped. */
function sampleProcess(pid: number) {
  let maxRss = 0;
  let maxFds = 0;
  let count = 0;
  const timer = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
      maxRss = Math.max(maxRss, rss);
      maxFds = Math.max(maxFds, readdirSync(`/proc/${pid}/fd`).length);
      count += 1;
    } catch {
      // The process is gone.
    }
  }, 200);
  return {
    stop: () => clearInterval(timer),
    count: () => count,
    maxRssBytes: () => maxRss,
    maxFds: () => maxFds,
  };
}
