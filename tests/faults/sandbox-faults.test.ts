/**
 * Faults of the sandbox and the machine, done for real with the CLI as a child process: the container killed
 * from outside, the Docker engine gone mid-run (a socket forwarder we close), a hanging worker, a full disk
 * under .agent-runner/runs. Each checks the exit code, the note, what is preserved and that no labelled
 * container is left.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startVanishingDocker } from '../support/faults-docker-proxy.js';
import {
  commandStarted,
  labelledContainers,
  readNote,
  runToEnd,
  SHORT_TIMEOUTS_YAML,
  startRunner,
  waitForJournalEvent,
  setupFaultTask,
  command,
  COMMIT_SLUG,
} from '../support/faults-harness.js';
import { assessmentReply, decisionReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import type { ScriptedChatServer } from '../support/scripted-chat-server.js';
import type { ScriptedResponsesServer } from '../support/scripted-responses-server.js';
import { git } from '../support/task-repo.js';

let chat: ScriptedChatServer;
let responses: ScriptedResponsesServer;

async function setupRepo(taskId: string, yaml = SHORT_TIMEOUTS_YAML) {
  const task = await setupFaultTask(taskId, yaml);
  ({ chat, responses } = task);
  return task;
}

/** The user's own branch and working tree, which no fault may change. */
function expectUserRepositoryUntouched(root: string): void {
  expect(git(root, 'log', '-1', '--format=%s', 'main')).toBe('config');
  expect(git(root, 'status', '--porcelain', '--', '.', ':(exclude).agent-runner')).toBe('');
}

describe('sandbox and machine faults', () => {
  it('the container killed from outside mid-run → FAILED, exit 4, commits and files kept', async () => {
    const id = 'FAULT-DOCKERKILL';
    const { root, env } = await setupRepo(id);
    chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
    );
    responses.enqueue(command(COMMIT_SLUG), command('echo kept > kept.txt; sleep 600'));
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id], { cwd: root, env });
    const started = await waitForJournalEvent(root, id, (event) => event.type === 'sandbox_started', runner);
    await waitForJournalEvent(root, id, commandStarted('sleep 600'), runner);
    execFileSync('docker', ['kill', String(started.sandboxId)]);
    const { code } = await runner.exited;
    expect(code, runner.stderr()).toBe(4);
    expect(runner.stderr()).toMatch(/sandbox container of task FAULT-DOCKERKILL was (stopped|removed)/);
    expect(runner.stderr()).toContain(`agent-runner resume ${id}`);
    const note = readNote(root, id);
    expect(note).toContain('| **State** | **FAILED**');
    expect(note).toContain('sandbox_failed');
    // The commit made before the kill is on the task branch; the uncommitted file is still on disk.
    expect(git(root, 'log', '-1', '--format=%s', `agent-runner/${id}`)).toBe('Add slugify');
    const sandboxFile = path.join(root, '.agent-runner', 'sandboxes', id, 'repo', 'kept.txt');
    expect(readFileSync(sandboxFile, 'utf8')).toBe('kept\n');
    expectUserRepositoryUntouched(root);
    expect(await labelledContainers(id, root)).toEqual([]);
  });

  it('the Docker engine gone mid-run → exit 4 with the fix; gc removes the container once it is back', async () => {
    const id = 'FAULT-ENGINE';
    const { root, env } = await setupRepo(id);
    const engine = await startVanishingDocker(path.join(tmpdir(), `ar-faults-docker-${process.pid}.sock`));
    onTestFinished(() => engine.vanish().catch(() => undefined));
    chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
    );
    responses.enqueue(command(COMMIT_SLUG), command('echo kept > kept.txt; sleep 600'));
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id], {
      cwd: root,
      env: { ...env, DOCKER_HOST: `unix://${engine.socketPath}` },
    });
    await waitForJournalEvent(root, id, commandStarted('sleep 600'), runner);
    await engine.vanish();
    const { code } = await runner.exited;
    expect(code, runner.stderr()).toBe(4);
    expect(runner.stderr()).toContain(`The Docker engine at unix://${engine.socketPath} stopped answering`);
    const note = readNote(root, id);
    expect(note).toContain('| **State** | **FAILED**');
    expect(note).toContain('docker_unavailable');
    expect(git(root, 'log', '-1', '--format=%s', `agent-runner/${id}`)).toBe('Add slugify');
    expect(existsSync(path.join(root, '.agent-runner', 'sandboxes', id, 'repo', 'kept.txt'))).toBe(true);
    expectUserRepositoryUntouched(root);
    // The runner could not remove its container through the vanished engine; its pid is dead now.
    expect(await labelledContainers(id, root)).toHaveLength(1);
    const status = await runToEnd(['status'], { cwd: root, env });
    expect(status.stdout).toMatch(/FAULT-ENGINE\s+finished\s+FAILED/);
    expect(status.stdout).toContain('(orphan)');
    const gc = await runToEnd(['gc'], { cwd: root, env });
    expect(gc.code, gc.stderr).toBe(0);
    expect(gc.stdout).toMatch(/removed container agent-runner-FAULT-ENGINE-\w+ \(task FAULT-ENGINE/);
    // The finished task's worktree stays: its commit is on no other branch.
    expect(gc.stdout).toContain(`kept ${id}: 1 commit(s) on agent-runner/${id}`);
    expect(await labelledContainers(id, root)).toEqual([]);
  });

  it('a hanging worker is stopped at worker.timeout; the run is recorded as timed out', async () => {
    const id = 'FAULT-HANG';
    const { root, env } = await setupRepo(
      id,
      SHORT_TIMEOUTS_YAML.replace('timeout: 60s', 'timeout: 3s').replace('grace: 2s', 'grace: 1s'),
    );
    chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify.') },
      { reply: assessmentReply(false, ['AC-1'], 'The worker hung and was stopped.') },
      { reply: decisionReply('abort', 'The worker hangs on every attempt.') },
    );
    responses.enqueue(command('echo partial > partial.txt; sleep 600'));
    const startedAt = Date.now();
    const result = await runToEnd(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], { cwd: root, env });
    expect(result.code, result.stderr).toBe(1);
    expect(Date.now() - startedAt).toBeLessThan(60_000);
    const finished = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; timedOut?: boolean; exitCode?: number })
      .find((event) => event.type === 'worker_finished');
    expect(finished).toMatchObject({ timedOut: true, exitCode: 124 });
    const note = readNote(root, id);
    expect(note).toContain('| **State** | **FAILED**');
    expect(note).toMatch(/### Run 1 \([^)]*exec[^)]*timed out, /);
    expect(git(root, 'show', `refs/agent-runner/wip/${id}:partial.txt`)).toBe('partial');
    expect(chat.remaining()).toBe(0);
    expect(await labelledContainers(id, root)).toEqual([]);
  });

  it('the disk under .agent-runner/runs fills up mid-run → FAILED (disk_full), exit 4, the note still written', async () => {
    const id = 'FAULT-DISKFULL';
    const { root, env } = await setupRepo(id);
    const runs = path.join(root, '.agent-runner', 'runs');
    mkdirSync(runs, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', runs]);
    try {
      chat.push(
        { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
        { reply: runWorkerReply('Implement slugify with a test and commit.') },
        { reply: assessmentReply(false, ['AC-1'], 'not yet') },
        { reply: decisionReply('abort', 'stop') },
      );
      responses.enqueue(
        command(COMMIT_SLUG),
        command('echo more > more.txt; sleep 2'),
        // After the fill: an output whose tail (2000 characters) the run's record carries, so recording the
        // run needs more than the few KiB a full tmpfs still gives its files' last pages.
        command("echo still working; head -c 3000 /dev/zero | tr '\\0' x"),
      );
      const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id], { cwd: root, env });
      await waitForJournalEvent(root, id, commandStarted('sleep 2'), runner);
      // Fill what is left of the disk while the worker runs.
      // To the last byte: a few KiB left over would take the next events, and the task would learn of the
      // full disk later or not at all (when its run ends on the model's error first).
      const filler = path.join(runs, 'filler');
      for (const chunk of [64 * 1024, 1]) {
        try {
          for (;;) appendFileSync(filler, Buffer.alloc(chunk));
        } catch (error) {
          expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
        }
      }
      const { code } = await runner.exited;
      expect(code, runner.stderr()).toBe(4);
      expect(runner.stderr()).toContain('The disk is full: agent-runner could not write the task');
      expect(runner.stderr()).toContain('agent-runner resume');
      // The note lives outside runs/, so it is written; the work is in the sandbox repository.
      const note = readNote(root, id);
      expect(note).toContain('| **State** | **FAILED**');
      expect(note).toContain('disk_full');
      expect(existsSync(path.join(root, '.agent-runner', 'sandboxes', id, 'repo', 'more.txt'))).toBe(true);
      const sandboxRepo = path.join(root, '.agent-runner', 'sandboxes', id, 'repo');
      expect(git(sandboxRepo, '-c', `safe.directory=${sandboxRepo}`, 'log', '-1', '--format=%s')).toBe(
        'Add slugify',
      );
      expectUserRepositoryUntouched(root);
      expect(await labelledContainers(id, root)).toEqual([]);
    } finally {
      execFileSync('umount', [runs]);
    }
  });
});
