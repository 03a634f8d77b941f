/**
 * A SandboxRuntime decorator that turns the low-level failures of a sandbox operation into the fault the
 * person has to fix: the Docker engine stopped answering (EnvironmentError `docker_unavailable`), or the
 * task's container was stopped or removed from outside agent-runner (`sandbox_failed`). It asks the engine
 * only after something failed, so the normal path costs nothing.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type {
  ExecOptions,
  ExecResult,
  SandboxInfo,
  SandboxNetwork,
  SandboxRuntime,
  SandboxEnd,
  SandboxSpec,
  SandboxSummary,
} from '../core/ports.js';
import { AgentRunnerError, EnvironmentError } from '../errors.js';
import { SANDBOX_LABELS } from '../sandbox/container-options.js';
import { sandboxEndMessage } from './sandbox-end-message.js';

/** How long the diagnosis waits for the engine to answer a ping. */
const PING_TIMEOUT_MS = 5_000;

export interface EngineWatchOptions {
  taskId: string;
  /** Where the engine is (`unix:///var/run/docker.sock`), for the message. */
  dockerHost: string;
}

export class EngineWatchRuntime implements SandboxRuntime {
  readonly setNetwork?: (sandboxId: string, network: SandboxNetwork) => Promise<void>;
  readonly applyOwnership?: SandboxRuntime['applyOwnership'];

  constructor(
    private readonly inner: SandboxRuntime,
    private readonly options: EngineWatchOptions,
  ) {
    const setNetwork = inner.setNetwork?.bind(inner);
    if (setNetwork) {
      this.setNetwork = (sandboxId, network) => this.watch(() => setNetwork(sandboxId, network), sandboxId);
    }
    const applyOwnership = inner.applyOwnership?.bind(inner);
    if (applyOwnership) this.applyOwnership = (request) => this.watch(() => applyOwnership(request), null);
  }

  ping(): Promise<{ version: string }> {
    return this.inner.ping();
  }

  create(spec: SandboxSpec): Promise<SandboxInfo> {
    return this.watch(() => this.inner.create(spec), null);
  }

  exec(sandboxId: string, argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
    return this.watch(() => this.inner.exec(sandboxId, argv, options), sandboxId);
  }

  remove(sandboxId: string): Promise<void> {
    return this.watch(() => this.inner.remove(sandboxId), null);
  }

  halt(sandboxId: string): Promise<void> {
    return this.watch(() => this.inner.halt?.(sandboxId) ?? this.inner.remove(sandboxId), null);
  }

  ended(sandboxId: string): Promise<SandboxEnd | null> {
    return this.inner.ended?.(sandboxId) ?? Promise.resolve(null);
  }

  list(labels: Record<string, string>): Promise<SandboxSummary[]> {
    return this.watch(() => this.inner.list(labels), null);
  }

  private async watch<T>(operation: () => Promise<T>, sandboxId: string | null): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw await this.diagnose(error, sandboxId);
    }
  }

  /** The error to report for a failed operation. */
  async diagnose(error: unknown, sandboxId: string | null): Promise<unknown> {
    if (error instanceof AgentRunnerError && error.code === 'docker_unavailable') return error;
    const { taskId, dockerHost } = this.options;
    const pinged = await Promise.race([
      this.inner.ping().then(
        () => true,
        () => false,
      ),
      delay(PING_TIMEOUT_MS, false),
    ]);
    if (!pinged) {
      return new EnvironmentError(
        'docker_unavailable',
        `The Docker engine at ${dockerHost} stopped answering while task ${taskId} ran (${(error as Error)?.message ?? String(error)}). ` +
          'Start it again (`sudo systemctl start docker`), then `agent-runner resume ' +
          `${taskId}\` to continue; the worker's commits are on the task branch and its uncommitted files in ` +
          `.agent-runner/sandboxes/${taskId}/repo. \`agent-runner gc\` removes the container it left behind.`,
        { cause: error, retryable: true, details: { dockerHost, taskId } },
      );
    }
    if (sandboxId === null) return error;
    const end = await this.endOf(sandboxId);
    if (end === undefined || end?.state === 'running') return error;
    return new EnvironmentError('sandbox_failed', sandboxEndMessage(taskId, end), {
      cause: error,
      details: {
        sandboxId,
        taskId,
        state: end?.state ?? 'removed',
        ...(end ? { exitCode: end.exitCode, runtime: end.runtime, oomKilled: end.oomKilled } : {}),
        ...(end?.error ? { engineError: end.error } : {}),
      },
    });
  }

  /** The container's recorded end (null: removed; undefined: the engine could not say). */
  private async endOf(sandboxId: string): Promise<SandboxEnd | null | undefined> {
    if (this.inner.ended) return this.inner.ended(sandboxId).catch(() => undefined);
    const containers = await this.inner
      .list({ [SANDBOX_LABELS.task]: this.options.taskId })
      .catch(() => null);
    if (containers === null) return undefined;
    const container = containers.find((candidate) => candidate.id === sandboxId);
    // A runtime that cannot inspect says only the state; the exit status is unknown.
    return container
      ? { state: container.state, exitCode: -1, error: '', oomKilled: false, runtime: 'unknown' }
      : null;
  }
}
