/**
 * The core's SandboxProviderPort: builds the task's container spec from the config and the prepared
 * workspace (the sandbox repository at /workspace, a per-task CODEX_HOME, limits, network) and starts it as
 * soon as the workspace is mountable; runs the set-up commands once the workspace is prepared, before the
 * first worker run.
 */
import { chown, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/schema.js';
import type { MountSpec, SandboxNetwork, SandboxProviderPort, SandboxRuntime } from '../core/ports.js';
import { AgentRunnerError } from '../errors.js';
import type { WorkspaceMount } from '../workspace/prepare-task-workspace.js';

export const CODEX_HOME_IN_SANDBOX = '/codex-home';

/** What the gateway (or, without it, the direct route) adds to the sandbox. */
export interface SandboxModelAccess {
  env: Record<string, string>;
  mounts: MountSpec[];
  network: SandboxNetwork;
  extraHosts: string[];
  /** Replaces the keeper process (the gateway's relay); default `sleep infinity`. */
  keeper?: string[];
}

export interface DockerSandboxProviderOptions {
  runtime: SandboxRuntime;
  config: Config;
  image: string;
  repoRoot: string;
  taskId: string;
  /** The workspace's mount and worker user; read when create() is called (the workspace is mountable). */
  workspace: () => WorkspaceMount;
  access: SandboxModelAccess;
  /** Runs `sandbox.setup` and switches to the worker network policy; provided with the gateway. */
  setup?: (sandboxId: string) => Promise<void>;
  keep: boolean;
  /** `execUser`: the worker's `uid:gid` (the container's own user is the keeper's). */
  onKept?: (sandboxId: string, execUser: string) => void;
  /** Extra container labels (a kept sandbox is labelled so the orphan sweep leaves it alone). */
  labels?: Record<string, string>;
}

export class DockerSandboxProvider implements SandboxProviderPort {
  constructor(private readonly options: DockerSandboxProviderOptions) {}

  /** Host directory of the task's CODEX_HOME (sessions live there, so `resume` works across runs). */
  codexHomeHostPath(): string {
    return path.join(this.options.workspace().runDir, 'codex-home');
  }

  async create(): Promise<string> {
    const { config, access } = this.options;
    const workspace = this.options.workspace();
    const codexHome = this.codexHomeHostPath();
    await mkdir(codexHome, { recursive: true });
    await chown(codexHome, workspace.workerUser.uid, workspace.workerUser.gid).catch(() => undefined);
    const info = await this.options.runtime.create({
      taskId: this.options.taskId,
      repoPath: this.options.repoRoot,
      image: this.options.image,
      user: workspace.workerUser,
      mounts: [
        ...workspace.mounts,
        { hostPath: codexHome, containerPath: CODEX_HOME_IN_SANDBOX },
        ...access.mounts,
      ],
      workdir: workspace.workdir,
      // sandbox.env first: the runner's own variables (CODEX_HOME, the gateway token, proxies) win.
      env: { ...config.sandbox.env, ...workspace.env, CODEX_HOME: CODEX_HOME_IN_SANDBOX, ...access.env },
      limits: { cpus: config.sandbox.cpus, memoryBytes: config.sandbox.memory, pids: config.sandbox.pids },
      network: access.network,
      extraHosts: access.extraHosts,
      ...(access.keeper ? { keeper: access.keeper } : {}),
      ...(this.options.labels ? { labels: this.options.labels } : {}),
    });
    return info.id;
  }

  async setUp(sandboxId: string): Promise<void> {
    try {
      await this.options.setup?.(sandboxId);
    } catch (error) {
      throw error instanceof AgentRunnerError
        ? error
        : new AgentRunnerError('sandbox_failed', `Sandbox set-up failed: ${(error as Error).message}`, {
            cause: error,
          });
    }
  }

  async stop(sandboxId: string): Promise<void> {
    if (this.options.keep) {
      const { uid, gid } = this.options.workspace().workerUser;
      this.options.onKept?.(sandboxId, `${uid}:${gid}`);
      return;
    }
    await this.options.runtime.remove(sandboxId);
  }
}
