/**
 * Entering a sandbox as the worker, for tests: the real runtime's exec, so the command runs as the worker's
 * uid (the one the container records in its `agent-runner.user` label, not the keeper's uid a plain
 * `docker exec` enters as) and is ended at its time limit like any exec of the runner (SIGTERM to its process
 * group, then SIGKILL). One helper, so no test enters a sandbox by hand as the wrong user or without a limit.
 */
import { testRuntimeSpec } from './test-runtime.js';
import type { ExecOptions, ExecResult, SandboxInfo, SandboxRuntime } from '../../src/core/ports.js';
import type { PreparedWorkspace } from '../../src/workspace/prepare-task-workspace.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';

/** The default time limit of a test's exec. */
export const WORKER_EXEC_TIMEOUT_MS = 60_000;

export interface WorkerExecOptions extends Omit<ExecOptions, 'user' | 'timeoutMs'> {
  /** Wall clock (default {@link WORKER_EXEC_TIMEOUT_MS}); the exec ends with exit 124 after it. */
  timeoutMs?: number;
  /** The runtime whose sandbox it is (default: one on the local Docker, for containers a CLI run made). */
  runtime?: SandboxRuntime;
}

/** A finished exec, with its output as one text: stdout, then stderr, trimmed. */
export interface WorkerExecResult extends ExecResult {
  output: string;
}

let localRuntime: DockerSandboxRuntime | undefined;

/** Runs `argv` in the sandbox as the worker, with a time limit; a non-zero exit is data, as for the runner. */
export async function execAsWorker(
  sandboxId: string,
  argv: readonly string[],
  options: WorkerExecOptions = {},
): Promise<WorkerExecResult> {
  const { runtime, timeoutMs, ...rest } = options;
  localRuntime ??= new DockerSandboxRuntime(createDockerClient(), { version: '0.0.0-test' });
  const result = await (runtime ?? localRuntime).exec(sandboxId, argv, {
    ...rest,
    timeoutMs: timeoutMs ?? WORKER_EXEC_TIMEOUT_MS,
  });
  return { ...result, output: `${result.stdoutTail}${result.stderrTail}`.trim() };
}

/** {@link execAsWorker} of a bash script (`bash -c script`). */
export function bashAsWorker(
  sandboxId: string,
  script: string,
  options: WorkerExecOptions = {},
): Promise<WorkerExecResult> {
  return execAsWorker(sandboxId, ['bash', '-c', script], options);
}

/**
 * A network-less sandbox over a prepared task workspace, as the runner creates one (its worker user, mounts,
 * workdir and environment), with one CPU and `memoryBytes`: for tests that drive the checks or the workspace
 * without a worker. The caller removes it.
 */
export function sandboxOverWorkspace(
  runtime: SandboxRuntime,
  input: {
    taskId: string;
    repoRoot: string;
    image: string;
    prepared: PreparedWorkspace;
    memoryBytes: number;
    labels: Record<string, string>;
  },
): Promise<SandboxInfo> {
  const { prepared } = input;
  return runtime.create({
    taskId: input.taskId,
    repoPath: input.repoRoot,
    image: input.image,
    user: prepared.workerUser,
    mounts: prepared.mounts,
    workdir: prepared.workdir,
    env: prepared.env,
    limits: { cpus: 1, memoryBytes: input.memoryBytes, pids: 256 },
    network: { mode: 'none' },
    labels: input.labels,
    ...testRuntimeSpec,
  });
}
