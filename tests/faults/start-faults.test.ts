/**
 * Docker failing at the start of a run, done for real with the CLI as a child process. Planning does not wait
 * for the Docker side, so the engine may fail before or while the plan request is in flight: either way the
 * run ends exit 4 with the engine's address and the fix, the plan request is abandoned, nothing is created in
 * the repository (no task branch, no worktree), no container is left and the task's lock is released.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startVanishingDocker } from '../support/faults-docker-proxy.js';
import { labelledContainers, readNote, setupFaultTask, startRunner } from '../support/faults-harness.js';
import { git } from '../support/task-repo.js';

/** What a failed start may leave: the task's note and run directory, nothing else, and no lock. */
async function expectNothingStarted(root: string, id: string): Promise<void> {
  expect(git(root, 'branch', '--list', `agent-runner/${id}`)).toBe('');
  expect(git(root, 'worktree', 'list', '--porcelain').match(/^worktree /gm)).toHaveLength(1);
  expect(git(root, 'status', '--porcelain', '--', '.', ':(exclude).agent-runner')).toBe('');
  expect(existsSync(path.join(root, '.agent-runner', 'runs', id, 'lock'))).toBe(false);
  expect(await labelledContainers(id, root)).toEqual([]);
}

describe('Docker faults at the start of a run', () => {
  it('no engine at DOCKER_HOST → exit 4 with the fix, nothing created', async () => {
    const id = 'FAULT-NO-ENGINE';
    const { root, env, chat } = await setupFaultTask(id);
    chat.push({ hang: true });
    const socket = path.join(tmpdir(), `ar-faults-none-${process.pid}.sock`);
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id], {
      cwd: root,
      env: { ...env, DOCKER_HOST: `unix://${socket}` },
    });
    const { code } = await runner.exited;
    expect(code, runner.stderr()).toBe(4);
    expect(runner.stderr()).toContain(`Docker is not reachable at unix://${socket}`);
    expect(runner.stderr()).toContain('set DOCKER_HOST to a running engine');
    await expectNothingStarted(root, id);
  });

  it('the engine gone while the plan request is in flight → the plan call is abandoned, exit 4, nothing created', async () => {
    const id = 'FAULT-ENGINE-PLANNING';
    const { root, env, chat } = await setupFaultTask(id);
    // The model never answers the plan: only the engine's failure can end this run.
    chat.push({ hang: true });
    const engine = await startVanishingDocker(
      path.join(tmpdir(), `ar-faults-held-${process.pid}.sock`),
      undefined,
      {
        hold: true,
      },
    );
    onTestFinished(() => engine.vanish().catch(() => undefined));
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id], {
      cwd: root,
      env: { ...env, DOCKER_HOST: `unix://${engine.socketPath}` },
    });
    const deadline = Date.now() + 60_000;
    while (chat.requests.length === 0 && Date.now() < deadline) {
      if (runner.child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(
      chat.requests.map((request) => request.path),
      runner.stderr(),
    ).toEqual(['/v1/chat/completions']);
    // The plan request is in flight and the engine has not answered the runner's ping: now it goes away.
    await engine.vanish();
    const vanishedAt = Date.now();
    const { code } = await runner.exited;
    expect(code, runner.stderr()).toBe(4);
    expect(Date.now() - vanishedAt).toBeLessThan(20_000);
    expect(runner.stderr()).toContain(`Docker is not reachable at unix://${engine.socketPath}`);
    const note = readNote(root, id);
    expect(note).toContain('| **State** | **FAILED**');
    expect(note).toContain('docker_unavailable');
    await expectNothingStarted(root, id);
  });
});
