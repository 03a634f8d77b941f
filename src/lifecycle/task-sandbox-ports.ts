/**
 * The workspace and the sandbox provider of one task, wired the same way for a run and for a project's
 * combined DoD check: the sandbox repository under the configured scope (ownership applied by the runtime's
 * helper container when the runner is not root), the container over the workspace's mount with the gateway's
 * access, and the set-up commands through the gateway.
 */
import type { Config } from '../config/schema.js';
import type { SetupCommandReport } from '../core/events.js';
import type { OwnershipEntry, SandboxRuntime } from '../core/ports.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import { DockerSandboxProvider } from '../sandbox/docker-sandbox-provider.js';
import { GitTaskWorkspace } from '../workspace/git-task-workspace.js';
import { SANDBOX_WORKDIR, taskLayout } from '../workspace/layout.js';
import { defaultScope, mergeScope } from '../workspace/scope.js';

export interface TaskSandboxInput {
  runtime: SandboxRuntime;
  config: Config;
  image: string;
  repoRoot: string;
  taskId: string;
  /** Base of a new task branch (default HEAD). */
  base?: string;
  dodSkipped: boolean;
  gateway: Pick<TaskGateway, 'access' | 'setup'>;
  /** The set-up: Ctrl-C, each command's progress, and the commands when they differ from `sandbox.setup`. */
  setup: {
    signal?: AbortSignal;
    onReport?: (report: SetupCommandReport) => void;
    commands?: readonly string[];
  };
  keep: boolean;
  onKept?: (sandboxId: string, execUser: string) => void;
  labels?: Record<string, string>;
}

export function taskSandboxPorts(input: TaskSandboxInput): {
  workspace: GitTaskWorkspace;
  sandboxes: DockerSandboxProvider;
} {
  const { runtime, config, image, repoRoot, taskId, gateway } = input;
  const workspace = new GitTaskWorkspace(runtime, {
    repoRoot,
    taskId,
    ...(input.base !== undefined ? { base: input.base } : {}),
    scope: mergeScope(defaultScope(), config.scope),
    dod: config.dod,
    dodSkipped: input.dodSkipped,
    graceMs: config.worker.grace,
    replayCaps: config.sandbox.replay,
    // A runner that is not root cannot chown: a helper container applies the read-only ownership.
    ...(runtime.applyOwnership
      ? {
          applier: (hostDir: string, entries: readonly OwnershipEntry[]) =>
            runtime.applyOwnership!({ taskId, repoPath: repoRoot, image, hostDir, entries }),
        }
      : {}),
  });
  const sandboxes = new DockerSandboxProvider({
    runtime,
    config,
    image,
    repoRoot,
    taskId,
    workspace: () => workspace.mount,
    access: gateway.access,
    setup: (sandboxId) =>
      gateway.setup(runtime, sandboxId, {
        workdir: SANDBOX_WORKDIR,
        logDir: taskLayout(repoRoot, taskId).runDir,
        ...input.setup,
      }),
    keep: input.keep,
    ...(input.onKept ? { onKept: input.onKept } : {}),
    ...(input.labels ? { labels: input.labels } : {}),
  });
  return { workspace, sandboxes };
}
