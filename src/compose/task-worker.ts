/**
 * The task's worker: the configured coding agent in the task's sandbox, talking to the model through the
 * gateway, its state files redacted, and its runs metered by the gateway.
 */
import path from 'node:path';
import type { SandboxRuntime, WorkerAdapter } from '../core/ports.js';
import { GatewayMeteredWorker } from '../gateway/gateway-guards.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import type { Redactor } from '../notes/redact.js';
import { CODEX_HOME_IN_SANDBOX } from '../sandbox/docker-sandbox-provider.js';
import { CodexWorkerAdapter } from '../worker/codex-adapter.js';
import { StateRedactingWorker } from '../worker/state-redacting-worker.js';
import { taskLayout } from '../workspace/layout.js';
import type { TaskHost } from './task-host.js';
import type { TaskSpec } from './task-spec.js';

export function taskWorker(
  host: TaskHost,
  spec: Pick<TaskSpec, 'config' | 'repoRoot' | 'taskId'>,
  runtime: SandboxRuntime,
  gateway: TaskGateway,
  redact: Redactor,
): WorkerAdapter {
  const { config } = spec;
  const codexHomeHostPath = path.join(taskLayout(spec.repoRoot, spec.taskId).runDir, 'codex-home');
  return new GatewayMeteredWorker(
    host.dependencies.worker ??
      new StateRedactingWorker(
        new CodexWorkerAdapter(runtime, {
          model: config.worker.model ?? config.meta.model,
          provider: { ...gateway.codexProvider, requestMaxRetries: 2, streamMaxRetries: 2 },
          configOverrides: gateway.codexConfigOverrides,
          codexHome: CODEX_HOME_IN_SANDBOX,
          codexHomeHostPath,
        }),
        codexHomeHostPath,
        redact,
      ),
    gateway.gateway,
  );
}
