/**
 * The workspace and the sandbox provider of one task, wired the same way for a run and for a project's
 * combined DoD check: the sandbox repository under the configured scope (ownership applied by the runtime's
 * helper container when the runner is not root), the container over the workspace's mount with the gateway's
 * access, and the set-up commands through the gateway.
 */
import type { Config } from '../config/schema.js';
import type { SetupCommandReport } from '../core/events.js';
import type { MountSpec, OwnershipEntry, SandboxRuntime } from '../core/ports.js';
import type { SandboxRuntimeChoice } from '../core/records.js';
import type { OwnershipApplier } from '../workspace/scope/permissions.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import { DockerSandboxProvider, hardCapWanted } from '../sandbox/docker-sandbox-provider.js';
import { GitTaskWorkspace } from '../workspace/git-task-workspace.js';
import { SANDBOX_WORKDIR, taskLayout } from '../workspace/layout.js';
import { defaultScope, memoryBankScope, mergeScope } from '../workspace/scope/scope.js';

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
  /** More mounts (the integration sandbox's read-only inbox). */
  extraMounts?: MountSpec[];
  /** No worker runs in it: nothing read-only (the integration sandbox). */
  noReadOnly?: boolean;
  onKept?: (sandboxId: string, execUser: string) => void;
  labels?: Record<string, string>;
  /** The OCI runtime of the sandbox and its helper containers (startDockerSide's choice). */
  containerRuntime?: SandboxRuntimeChoice;
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
    scope: mergeScope(mergeScope(defaultScope(), memoryBankScope(config.memory.dir)), config.scope),
    dod: config.dod,
    dodSkipped: input.dodSkipped,
    graceMs: config.worker.grace,
    replayCaps: config.sandbox.replay,
    // A runner that is not root cannot chown: a helper container applies the read-only ownership.
    ...ownershipApplier(runtime, { repoRoot, taskId, image }),
    ...(input.noReadOnly ? { noReadOnly: true } : {}),
    diskCap: { capBytes: config.sandbox.disk.repository, ...hardCapWanted(config, input.keep) },
  });
  const sandboxes = new DockerSandboxProvider({
    runtime,
    config,
    image,
    repoRoot,
    taskId,
    workspace: () => workspace.mount,
    access: input.extraMounts
      ? { ...gateway.access, mounts: [...gateway.access.mounts, ...input.extraMounts] }
      : gateway.access,
    setup: (sandboxId) =>
      gateway.setup(runtime, sandboxId, {
        workdir: SANDBOX_WORKDIR,
        logDir: taskLayout(repoRoot, taskId).runDir,
        ...input.setup,
      }),
    keep: input.keep,
    ...(input.onKept ? { onKept: input.onKept } : {}),
    ...(input.labels ? { labels: input.labels } : {}),
    ...(input.containerRuntime ? { containerRuntime: input.containerRuntime } : {}),
  });
  return { workspace, sandboxes };
}

/**
 * The helper container that applies (or gives back) ownership for a runner that is not root, when the runtime has
 * one. It runs under the engine's default runtime whatever the task's (src/sandbox/ownership-helper.ts says why).
 */
export function ownershipApplier(
  runtime: SandboxRuntime,
  where: { repoRoot: string; taskId: string; image: string },
): { applier?: OwnershipApplier } {
  if (!runtime.applyOwnership) return {};
  const apply = runtime.applyOwnership.bind(runtime);
  return {
    applier: (hostDir: string, entries: readonly OwnershipEntry[]) =>
      apply({
        taskId: where.taskId,
        repoPath: where.repoRoot,
        image: where.image,
        hostDir,
        entries,
      }),
  };
}
