/**
 * A task's container that is no longer running is reported for what happened to it, from the engine's own
 * record (docker inspect): stopped from outside (a signal: docker kill), or died by itself: a runc container
 * whose init ended, a runsc container whose gVisor sandbox ended (its Sentry's host process aborted here, as
 * a Sentry that crashes does). Real sandboxes, real engine; the runtime is wrapped in EngineWatchRuntime as a
 * task's is, and the error is what the next exec into the dead container gets.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { SandboxEnd } from '../../src/core/ports.js';
import type { ContainerRuntime } from '../../src/core/records.js';
import { AgentRunnerError } from '../../src/errors.js';
import { EngineWatchRuntime } from '../../src/lifecycle/engine-watch.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { builtWorkerImage } from '../support/worker-image.js';

const docker = createDockerClient();
const inner = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
let image = '';

beforeAll(async () => {
  image = await builtWorkerImage(docker);
}, 600_000);

async function startSandbox(runtime: ContainerRuntime, keeper?: string[]) {
  const taskId = `test-end-${randomUUID().slice(0, 8)}`;
  const sandbox = await inner.create({
    taskId,
    repoPath: '/nonexistent-repo',
    image,
    user: { uid: 10001, gid: 10001 },
    mounts: [],
    workdir: '/',
    env: {},
    limits: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 64 },
    network: { mode: 'none' },
    runtime,
    ...(keeper ? { keeper } : {}),
  });
  onTestFinished(() => inner.remove(sandbox.id));
  const watched = new EngineWatchRuntime(inner, { taskId, dockerHost: 'unix:///var/run/docker.sock' });
  return { taskId, id: sandbox.id, watched };
}

async function waitUntilEnded(id: string): Promise<SandboxEnd> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const end = await inner.ended(id);
    if (end && end.state !== 'running') return end;
    await delay(100);
  }
  throw new Error(`container ${id} still running`);
}

/** The error an exec into the ended sandbox gets through the task's runtime. */
async function execError(watched: EngineWatchRuntime, id: string): Promise<AgentRunnerError> {
  const error = await watched.exec(id, ['true'], { timeoutMs: 10_000 }).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AgentRunnerError);
  return error as AgentRunnerError;
}

describe('a sandbox no longer running is reported truthfully', () => {
  it('runc, docker kill: stopped from outside, with the exit status', async () => {
    const { taskId, id, watched } = await startSandbox('runc');
    expect(await inner.ended(id)).toMatchObject({ state: 'running', runtime: 'runc' });
    execFileSync('docker', ['kill', id]);
    expect(await waitUntilEnded(id)).toMatchObject({ state: 'exited', exitCode: 137, oomKilled: false });
    const error = await execError(watched, id);
    expect(error.code).toBe('sandbox_failed');
    expect(error.message).toContain(
      `The sandbox container of task ${taskId} was stopped (exited, exit status 137, runtime runc)`,
    );
    expect(error.message).toContain('docker kill/stop/rm');
    expect(error.message).toContain(`agent-runner resume ${taskId}`);
  });

  it('runc, its init ends by itself: died by itself, not "from outside"', async () => {
    const { taskId, id, watched } = await startSandbox('runc', ['/bin/sh', '-c', 'sleep 1; exit 3']);
    expect(await waitUntilEnded(id)).toMatchObject({ state: 'exited', exitCode: 3, runtime: 'runc' });
    const error = await execError(watched, id);
    expect(error.code).toBe('sandbox_failed');
    expect(error.message).toContain(`task ${taskId} died by itself (exited, exit status 3, runtime runc)`);
    expect(error.message).not.toContain('from outside');
  });

  it("runsc, gVisor's sandbox process aborts: died by itself under gVisor, with the hint", async () => {
    const { taskId, id, watched } = await startSandbox('runsc');
    const { Pid, Running } = (await docker.getContainer(id).inspect()).State;
    expect(Running).toBe(true);
    // The container's pid on the host is gVisor's sandbox (the Sentry), not a process of the container.
    expect(execFileSync('ps', ['-o', 'args=', '-p', String(Pid)], { encoding: 'utf8' })).toMatch(
      /^runsc-sandbox /,
    );
    process.kill(Pid, 'SIGABRT');
    expect(await waitUntilEnded(id)).toMatchObject({
      state: 'exited',
      exitCode: 134,
      runtime: 'runsc',
      oomKilled: false,
    });
    const error = await execError(watched, id);
    expect(error.code).toBe('sandbox_failed');
    expect(error.message).toContain(`task ${taskId} died by itself (exited, exit status 134, runtime runsc)`);
    expect(error.message).toContain("gVisor's sandbox ended");
    expect(error.message).toContain('--runtime runc');
    expect(error.message).not.toContain('from outside');
    expect(error.details).toMatchObject({ exitCode: 134, runtime: 'runsc', state: 'exited' });
  });
});
