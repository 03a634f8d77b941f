/**
 * No phase without a time limit (real CLI, real codex, real container, scripted models). The worker plants what
 * blocks a reader for good where the runner reads from the sandbox, and each task must still end within its
 * `--timeout` + 30 s with its note, the documented exit code and no container:
 * - a FIFO at `.git/config` (every git call in the sandbox, the facts first, blocks on it);
 * - a FIFO at `.git/HEAD`, planted by the worker's own criterion check, so the read of the sandbox's head after
 *   the checks (`git rev-parse --verify -q HEAD^{commit}`, which had no limit a stop could cut) blocks;
 * - a FIFO at the file a criterion's check reads;
 * - a DoD check that prints without end;
 * - SIGTERM while the validation is blocked on the `.git/config` FIFO (exit 130, the note written).
 * Each first shows its probe, under both runtimes: inside the sandbox the worker (or its check) lists the FIFO
 * and a plain read of it there is cut by `timeout` (exit 124); under runc the FIFO is also in the sandbox
 * repository on the host, where a plain read blocks too. Under runsc gVisor keeps a FIFO made on a bind mount
 * in its own file system (the host's directory never holds it, as in host-git.test.ts), so the host-side probe
 * is that it is absent there; every git call in the sandbox still blocks on it, and the bounds are the same.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  journalEvents,
  labelledContainers,
  readNote,
  setupFaultTask,
  startRunner,
  command,
  waitForJournalEvent,
  type FaultTask,
} from '../support/faults-harness.js';
import { HOSTILE_YAML } from '../support/hostile-worker.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { assistantMessage, type ScriptedReply } from '../support/scripted-responses-server.js';
import { writeFileCommand } from '../support/task-repo.js';
import { UNDER_RUNSC } from '../support/test-runtime.js';

/**
 * The task's wall clock in the tests that end on it, and what the task may take beyond it. The five tasks
 * start together on a machine of two cores: the wall clock leaves each worker time to plant its FIFO first.
 */
const TIMEOUT_S = 45;
const SLACK_MS = 30_000;

function yaml(dodCommand: string): string {
  return [
    HOSTILE_YAML.trimEnd(),
    'dod:',
    '  baseline: off',
    '  checks:',
    '    - name: check',
    `      command: ${JSON.stringify(dodCommand)}`,
    '',
  ].join('\n');
}

interface HangRun {
  task: FaultTask;
  taskId: string;
  code: number | null;
  elapsedMs: number;
  endedAt: number;
  stdout: string;
  stderr: string;
}

/**
 * Starts `agent-runner run --json --timeout <timeout>` with a worker that runs `commands` (one codex turn
 * each); `whileRunning` may act on the runner (SIGTERM) before it ends.
 */
async function runHangTask(options: {
  name: string;
  dod: string;
  check?: string;
  commands: string[];
  timeout: string;
  /** The test's own `onTestFinished` (the tests run side by side). */
  onFinished: (cleanup: () => void | Promise<void>) => void;
  whileRunning?: (runner: ReturnType<typeof startRunner>, task: FaultTask, taskId: string) => Promise<void>;
}): Promise<HangRun> {
  const taskId = `sec-hang-${options.name}-${randomUUID().slice(0, 6)}`;
  const task = await setupFaultTask(taskId, yaml(options.dod), options.onFinished);
  // The default network policy (gateway-only), as the rest of the security suite attacks.
  delete task.env.AGENT_RUNNER_NETWORK;
  task.chat.push(
    {
      reply: planReply(taskId, [
        {
          id: 'AC-1',
          description: 'The requested change is committed.',
          ...(options.check ? { check: { kind: 'command', command: options.check } } : {}),
        },
      ]),
    },
    { reply: runWorkerReply('Do the requested change and commit it.') },
    { reply: assessmentReply(true, ['AC-1'], 'Checked the facts.') },
  );
  const replies: ScriptedReply[] = options.commands.map((cmd) => command(cmd));
  replies.push({ kind: 'output', items: [assistantMessage('Done.')] });
  task.responses.enqueue(...replies);
  const started = Date.now();
  const runner = startRunner(
    ['run', '--prd', 'PRD.md', '--task-id', taskId, '--json', '--timeout', options.timeout],
    { cwd: task.root, env: task.env },
  );
  await options.whileRunning?.(runner, task, taskId);
  const { code } = await runner.exited;
  return {
    task,
    taskId,
    code,
    elapsedMs: Date.now() - started,
    endedAt: Date.now(),
    stdout: runner.stdout(),
    stderr: runner.stderr(),
  };
}

/** The sandbox repository on the host (mounted at /workspace), where the worker's plants are. */
const sandboxRepo = (run: HangRun) =>
  path.join(run.task.root, '.agent-runner', 'sandboxes', run.taskId, 'repo');

/** Whether `argv` is still running after `ms` (then it is killed): a plain reader blocked on a FIFO is. */
async function stillRunningAfter(argv: string[], cwd: string, ms: number): Promise<boolean> {
  const child = spawn(argv[0] as string, argv.slice(1), { cwd, detached: true, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const result = await Promise.race([exited.then(() => false), delay(ms).then(() => true)]);
  if (result) process.kill(-(child.pid as number), 'SIGKILL');
  return result;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Appended to the plant: the FIFO as the sandbox sees it, and a plain read of it there, cut by `timeout`. */
const probeInside = (relative: string, reader: string): string =>
  `ls -l ${relative}; timeout 3 ${reader}; echo "plain-read-exit=$?"`;

/**
 * The FIFO is where the worker put it and a plain read of it blocks: inside the sandbox (the probe's output in
 * the journal, from the worker's command or the criterion check), and under runc on the host as well.
 */
async function expectBlockingFifo(run: HangRun, relative: string, reader: string[]): Promise<void> {
  const recorded = JSON.stringify(
    journalEvents(run.task.root, run.taskId).filter(
      (event) => event.type === 'run_recorded' || event.type === 'criteria_checks',
    ),
  );
  const escaped = relative.replace(/[.]/g, '\\.');
  expect(recorded, run.stderr.slice(-3000)).toMatch(new RegExp(`prw[-rwx]{7}[^"]* ${escaped}`));
  expect(recorded).toContain('plain-read-exit=124');
  const planted = path.join(sandboxRepo(run), relative);
  if (UNDER_RUNSC) {
    expect(lstatSync(planted, { throwIfNoEntry: false })?.isFIFO() ?? false).toBe(false);
    return;
  }
  expect(lstatSync(planted, { throwIfNoEntry: false })?.isFIFO(), run.stderr.slice(-3000)).toBe(true);
  expect(await stillRunningAfter(reader, sandboxRepo(run), 1500)).toBe(true);
}

/** Ended in time, NEEDS_REVIEW with the documented exit code, its note written, nothing left running. */
async function expectEndedWithNote(run: HangRun, exitCode: number, withinMs: number): Promise<void> {
  const summary = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
  const events = journalEvents(run.task.root, run.taskId);
  const startedAt = Date.parse(String(events[0]?.at));
  const timeline = events
    .map((event) => `${Date.parse(String(event.at)) - startedAt} ${event.type} ${String(event.to ?? '')}`)
    .join('\n');
  // HANG_TIMELINE=1 prints each task's timeline, to see where its time went.
  if (process.env.HANG_TIMELINE)
    console.log(
      `${run.taskId} ended at ${run.endedAt - startedAt} exit ${run.code} ${JSON.stringify(summary.error)}\n${timeline}`,
    );
  // From the task's start (its first event) to the runner's exit, as --timeout counts.
  expect(run.endedAt - startedAt, timeline).toBeLessThan(withinMs);
  expect(run.code, run.stderr.slice(-3000)).toBe(exitCode);
  expect(summary.type).toBe('summary');
  expect(summary.state).toBe('NEEDS_REVIEW');
  const note = readNote(run.task.root, run.taskId);
  expect(note).toContain('NEEDS_REVIEW');
  expect(events.some((event) => event.type === 'note_written')).toBe(true);
  expect(await labelledContainers(run.taskId, run.task.root)).toEqual([]);
}

/** The sandbox's head read as the runner reads it in the sandbox (the repository is the worker uid's here). */
const PLAIN_HEAD_READ = ['git', '-c', 'safe.directory=*', 'rev-parse', '--verify', '-q', 'HEAD^{commit}'];
const PLAIN_HEAD_READ_SHELL = "git -c safe.directory='*' rev-parse --verify -q 'HEAD^{commit}'";
const COMMIT_WORK = 'echo work > work.txt && git add -A && git commit -q -m "work"';
const WALL_CLOCK_BOUND_MS = TIMEOUT_S * 1000 + SLACK_MS;

// The five tasks run side by side: each has its own repository, servers and container, and the file runs alone.
describe.concurrent('a worker that plants what blocks a reader cannot keep the task from ending', () => {
  it('a FIFO at .git/config: the task ends at its --timeout with its note', async ({ onTestFinished }) => {
    const run = await runHangTask({
      onFinished: onTestFinished,
      name: 'config',
      dod: 'true',
      commands: [
        `${COMMIT_WORK} && rm .git/config && mkfifo .git/config && ${probeInside('.git/config', PLAIN_HEAD_READ_SHELL)}`,
      ],
      timeout: `${TIMEOUT_S}s`,
    });
    await expectBlockingFifo(run, '.git/config', PLAIN_HEAD_READ);
    await expectEndedWithNote(run, 124, WALL_CLOCK_BOUND_MS);
  });

  it("a FIFO at .git/HEAD planted by the worker's criterion check: the head read after the checks ends too", async ({
    onTestFinished,
  }) => {
    const run = await runHangTask({
      onFinished: onTestFinished,
      name: 'head',
      dod: 'true',
      check: 'bash check.sh',
      commands: [
        `${writeFileCommand('check.sh', `rm -f .git/HEAD && mkfifo .git/HEAD && ${probeInside('.git/HEAD', PLAIN_HEAD_READ_SHELL)}\n`)}\n${COMMIT_WORK}`,
      ],
      timeout: `${TIMEOUT_S}s`,
    });
    await expectBlockingFifo(run, '.git/HEAD', PLAIN_HEAD_READ);
    // The check did run (it planted the FIFO from inside the checks, after the head was first read).
    const checks = journalEvents(run.task.root, run.taskId).filter(
      (event) => event.type === 'criteria_checks',
    );
    expect(checks.length, run.stderr.slice(-3000)).toBeGreaterThan(0);
    await expectEndedWithNote(run, 124, WALL_CLOCK_BOUND_MS);
  });

  it('a FIFO at the file a criterion check reads: the check is cut at the wall clock', async ({
    onTestFinished,
  }) => {
    const run = await runHangTask({
      onFinished: onTestFinished,
      name: 'criterion',
      dod: 'true',
      check: 'cat data/input.txt',
      commands: [
        `${COMMIT_WORK} && mkdir -p data && mkfifo data/input.txt && ${probeInside('data/input.txt', 'cat data/input.txt')}`,
      ],
      timeout: `${TIMEOUT_S}s`,
    });
    await expectBlockingFifo(run, 'data/input.txt', ['cat', 'data/input.txt']);
    await expectEndedWithNote(run, 124, WALL_CLOCK_BOUND_MS);
  });

  it('a DoD check that prints without end: cut at the wall clock, its output bounded', async ({
    onTestFinished,
  }) => {
    const run = await runHangTask({
      onFinished: onTestFinished,
      name: 'dod',
      dod: 'bash check.sh',
      commands: [`${writeFileCommand('check.sh', 'yes endless-output\n')}\n${COMMIT_WORK}`],
      timeout: `${TIMEOUT_S}s`,
    });
    // The probe: the check ran and printed what the worker wrote.
    const dod = journalEvents(run.task.root, run.taskId).find((event) => event.type === 'dod') as
      { dod: { results: { outputTail: string }[] } } | undefined;
    expect(dod?.dod.results[0]?.outputTail, run.stderr.slice(-3000)).toContain('endless-output');
    expect(dod?.dod.results[0]?.outputTail.length).toBeLessThan(100_000);
    await expectEndedWithNote(run, 124, WALL_CLOCK_BOUND_MS);
  });

  it('SIGTERM while the validation is blocked on a FIFO at .git/config: exit 130 with the note', async ({
    onTestFinished,
  }) => {
    let signalledAt = 0;
    const run = await runHangTask({
      onFinished: onTestFinished,
      name: 'sigterm',
      dod: 'true',
      commands: [
        `${COMMIT_WORK} && rm .git/config && mkfifo .git/config && ${probeInside('.git/config', PLAIN_HEAD_READ_SHELL)}`,
      ],
      timeout: '10m',
      whileRunning: async (runner, task, taskId) => {
        await waitForJournalEvent(
          task.root,
          taskId,
          (event) => event.type === 'transition' && event.to === 'VALIDATING',
          runner,
          120_000,
        );
        // Blocked: nothing of the validation has finished a few seconds later.
        await delay(3_000);
        expect(journalEvents(task.root, taskId).some((event) => event.type === 'facts')).toBe(false);
        signalledAt = Date.now();
        runner.child.kill('SIGTERM');
      },
    });
    await expectBlockingFifo(run, '.git/config', PLAIN_HEAD_READ);
    expect(signalledAt).toBeGreaterThan(0);
    const timeline = journalEvents(run.task.root, run.taskId)
      .map((event) => `${Date.parse(String(event.at)) - signalledAt} ${event.type} ${String(event.to ?? '')}`)
      .join('\n');
    expect(run.endedAt - signalledAt, `${timeline}\n${run.stderr.slice(-2000)}`).toBeLessThan(SLACK_MS);
    await expectEndedWithNote(run, 130, Number.POSITIVE_INFINITY);
  });
});
