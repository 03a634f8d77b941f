/**
 * Entering a sandbox as the worker, for tests: the real runtime's exec, so the command runs as the worker's
 * uid (the one the container records in its `agent-runner.user` label, not the keeper's uid a plain
 * `docker exec` enters as) and is ended at its time limit like any exec of the runner (SIGTERM to its process
 * group, then SIGKILL). One helper, so no test enters a sandbox by hand as the wrong user or without a limit.
 */
import type { ExecOptions, ExecResult, SandboxRuntime } from '../../src/core/ports.js';
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
