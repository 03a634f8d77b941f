/**
 * The task's worker: the configured coding agent in the task's sandbox, talking to the model through the
 * gateway, its state files redacted, and its runs metered by the gateway.
 */
import path from 'node:path';
import type { Config } from '../config/schema.js';
import { configuredWorkers, type WorkerProfile } from '../config/workers.js';
import type { SandboxRuntime, WorkerAdapter } from '../core/ports.js';
import type { TaskRunnerOptions } from '../core/task-loop.js';
import { GatewayMeteredWorker } from '../gateway/gateway-guards.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import { CODEX_HOME_IN_SANDBOX } from '../sandbox/docker-sandbox-provider.js';
import { ClaudeWorkerAdapter } from '../worker/claude-adapter.js';
import { CodexWorkerAdapter } from '../worker/codex-adapter.js';
import { GeminiWorkerAdapter } from '../worker/gemini-adapter.js';
import { QwenWorkerAdapter } from '../worker/qwen-adapter.js';
import { OpenCodeWorkerAdapter } from '../worker/opencode-adapter.js';
import type { CliWorkerOptions } from '../worker/cli-run.js';
import type { WorkerType } from '../worker/worker-kinds.js';
import { WorkerSet } from '../worker/worker-set.js';
import type { WorkerOffer } from '../meta/system-prompt.js';
import { StateRedactingWorker } from '../worker/state-redacting-worker.js';
import { taskLayout } from '../workspace/layout.js';
import type { TaskHost } from './task-host.js';
import type { TaskSpec } from './task-spec.js';

/** The adapter of every worker CLI beside codex: all take the same wiring (its state below the worker home). */
const CLI_ADAPTERS: Record<
  Exclude<WorkerType, 'codex'>,
  new (runtime: SandboxRuntime, options: CliWorkerOptions) => WorkerAdapter
> = {
  claude: ClaudeWorkerAdapter,
  gemini: GeminiWorkerAdapter,
  qwen: QwenWorkerAdapter,
  opencode: OpenCodeWorkerAdapter,
};

/** A worker's state directory in the sandbox: CODEX_HOME for codex, a directory of it for every other CLI. */
export function workerHomeInSandbox(type: WorkerType): string {
  return type === 'codex' ? CODEX_HOME_IN_SANDBOX : path.posix.join(CODEX_HOME_IN_SANDBOX, type);
}

export function taskWorker(
  host: TaskHost,
  spec: Pick<TaskSpec, 'config' | 'repoRoot' | 'taskId'>,
  runtime: SandboxRuntime,
  gateway: TaskGateway,
): WorkerAdapter {
  const { config } = spec;
  // One worker home per task (CODEX_HOME; each other worker's state below it), redacted after every run.
  const codexHomeHostPath = path.join(taskLayout(spec.repoRoot, spec.taskId).runDir, 'codex-home');
  const adapter = (profile: WorkerProfile): WorkerAdapter => {
    if (profile.type !== 'codex')
      return new CLI_ADAPTERS[profile.type](runtime, {
        model: profile.model,
        baseUrl: `${gateway.relayOrigin}${profile.kind.prefix}`,
        apiKey: gateway.gateway.workerToken,
        home: workerHomeInSandbox(profile.type),
        extraArgs: profile.extraArgs,
        ...(profile.protocol === 'chat' ? { api: 'chat' as const } : {}),
      });
    return new CodexWorkerAdapter(runtime, {
      model: profile.model,
      provider: { ...gateway.codexProvider, requestMaxRetries: 2, streamMaxRetries: 2 },
      configOverrides: gateway.codexConfigOverrides,
      extraArgs: profile.extraArgs,
      codexHome: workerHomeInSandbox('codex'),
      codexHomeHostPath,
    });
  };
  const workers = configuredWorkers(config).map(adapter);
  return new GatewayMeteredWorker(
    host.dependencies.worker ??
      new StateRedactingWorker(
        workers.length === 1 ? (workers[0] as WorkerAdapter) : new WorkerSet(workers),
        codexHomeHostPath,
        host.redaction,
      ),
    gateway.gateway,
  );
}

/** The loop's view of the configured workers: the default one, then the others. */
export function taskWorkerOptions(config: Config): TaskRunnerOptions['worker'] {
  const [first, ...others] = configuredWorkers(config).map((profile) => ({
    type: profile.type,
    model: profile.model,
    timeoutMs: profile.timeoutMs,
  }));
  return {
    ...(first as { type: string; model: string; timeoutMs: number }),
    graceMs: config.worker.grace,
    ...(others.length > 0 ? { others } : {}),
  };
}

/** What the Meta-agent is told about the workers it may choose. */
export function metaWorkerOffers(config: Config): { workerTypes: string[]; workers: WorkerOffer[] } {
  const profiles = configuredWorkers(config);
  return {
    workerTypes: profiles.map((profile) => profile.type),
    workers: profiles.map((profile) => ({
      type: profile.type,
      model: profile.model,
      summary: profile.kind.summary,
    })),
  };
}
