/**
 * The core's SandboxProviderPort: builds the task's container spec from the config and the prepared
 * workspace (the sandbox repository at /workspace, a per-task CODEX_HOME, limits, network) and starts it as
 * soon as the workspace is mountable; runs the set-up commands once the workspace is prepared, before the
 * first worker run.
 */
import { chown, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/schema.js';
import type { DiskCapReached } from '../core/limits.js';
import type { DiskCapKind, DiskCapKinds, SandboxRuntimeChoice } from '../core/records.js';
import type { MountSpec, SandboxNetwork, SandboxProviderPort, SandboxRuntime } from '../core/ports.js';
import { AgentRunnerError } from '../errors.js';
import { SANDBOX_WORKDIR, taskLayout } from '../workspace/layout.js';
import type { DiskCapRequest, WorkspaceMount } from '../workspace/prepare-task-workspace.js';
import { mountCapVolume, releaseCapVolume } from './cap-volume.js';
import { DiskWatch, type DiskWatchOptions } from './disk-watch.js';
import { endStrayProcesses } from './stray-processes.js';

export const CODEX_HOME_IN_SANDBOX = '/codex-home';

/** The kind of a cap under `sandbox.disk.hard: false`. */
export const DISABLED_REASON = 'sandbox.disk.hard is false in the configuration';
export const DISABLED: DiskCapKind = { kind: 'watched', reason: DISABLED_REASON };

/**
 * Whether the task's capped directories get file systems of their own. Not for a sandbox kept with
 * --keep-sandbox: the kept container holds its mounts after the task, while the person looks at the same
 * directories on the host; plain directories (watched caps) keep both views the same.
 */
export function hardCapWanted(
  config: Pick<Config, 'sandbox'>,
  keep: boolean,
): Pick<DiskCapRequest, 'hard' | 'watchedReason'> {
  if (!config.sandbox.disk.hard) return { hard: false };
  if (keep)
    return {
      hard: false,
      watchedReason: '--keep-sandbox: the kept container and the host share plain directories',
    };
  return { hard: true };
}

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
  /** The disk watch's clocks (tests shorten them); the caps are `sandbox.disk`. */
  diskWatch?: Pick<DiskWatchOptions, 'intervalMs' | 'pollMs'>;
  /** The OCI runtime the container runs under and why (absent: the engine's default). */
  containerRuntime?: SandboxRuntimeChoice;
}

export class DockerSandboxProvider implements SandboxProviderPort {
  private watch: DiskWatch | null = null;
  private codexHomeCap: DiskCapKind | null = null;
  private created = false;

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
    const wanted = hardCapWanted(config, this.options.keep);
    this.codexHomeCap = wanted.hard
      ? await mountCapVolume({
          mountPath: codexHome,
          capBytes: config.sandbox.disk.codexHome,
          startBytes: 0,
          startFiles: 0,
          owner: workspace.workerUser,
        })
      : { kind: 'watched', reason: wanted.watchedReason ?? DISABLED_REASON };
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
      ...(this.options.containerRuntime ? { runtime: this.options.containerRuntime.runtime } : {}),
    });
    this.created = true;
    return info.id;
  }

  async setUp(sandboxId: string): Promise<void> {
    // Watched from here on: the files the task started with are there, and what runs next (set-up, worker,
    // checks) is what may write.
    await this.watchDisk(sandboxId);
    try {
      await this.options.setup?.(sandboxId);
    } catch (error) {
      throw error instanceof AgentRunnerError
        ? error
        : new AgentRunnerError('sandbox_failed', `Sandbox set-up failed: ${(error as Error).message}`, {
            cause: error,
          });
    }
    // A set-up command that wrote past a cap and ended before the watch looked: the task goes no further.
    const reached = await this.checkDisk();
    if (reached)
      throw new AgentRunnerError(
        'sandbox_failed',
        `Sandbox set-up went over a disk cap (sandbox.disk.${reached.cap})`,
      );
  }

  private async watchDisk(sandboxId: string): Promise<void> {
    const { config, runtime } = this.options;
    const repository = this.options.workspace().mounts.find((m) => m.containerPath === SANDBOX_WORKDIR);
    this.watch?.stop();
    this.watch = new DiskWatch({
      directories: [
        ...(repository
          ? [
              {
                cap: 'repository' as const,
                path: repository.hostPath,
                limitBytes: config.sandbox.disk.repository,
                hard: this.options.workspace().repositoryCap?.kind === 'hard',
              },
            ]
          : []),
        {
          cap: 'codexHome',
          path: this.codexHomeHostPath(),
          limitBytes: config.sandbox.disk.codexHome,
          hard: this.codexHomeCap?.kind === 'hard',
        },
      ],
      // Every process but the sandbox's init and keeper, at once: no grace for a writer.
      onExceeded: async () => void (await endStrayProcesses(runtime, sandboxId, 0)),
      ...this.options.diskWatch,
    });
    await this.watch.start();
  }

  /** The cap the sandbox went over, measured now unless the watch already saw one. */
  async checkDisk(): Promise<DiskCapReached | null> {
    return (await this.watch?.check()) ?? null;
  }

  /** Which kind each disk cap of the sandbox is; null before the sandbox was created. */
  diskCaps(): DiskCapKinds | null {
    if (!this.codexHomeCap) return null;
    return {
      repository: this.options.workspace().repositoryCap ?? DISABLED,
      codexHome: this.codexHomeCap,
    };
  }

  /** The runtime the sandbox runs under and why; null before it was created. */
  sandboxRuntime(): SandboxRuntimeChoice | null {
    return this.created ? (this.options.containerRuntime ?? null) : null;
  }

  async stop(sandboxId: string): Promise<void> {
    this.watch?.stop();
    if (this.options.keep) {
      const { uid, gid } = this.options.workspace().workerUser;
      this.options.onKept?.(sandboxId, `${uid}:${gid}`);
      return;
    }
    try {
      await this.options.runtime.remove(sandboxId);
    } finally {
      // The capped file systems go with the sandbox, even one the engine could not remove (it is an orphan for
      // gc now); their files stay in the directories, where resume adopts them. This is the only release for
      // the parallel project's combined and integration sandboxes (no task composition closes them); a task's
      // composition releases again on close for a task that ended before its sandbox existed (a no-op here).
      await this.releaseDisk();
    }
  }

  /** Ends the task's capped file systems; their files come back into the plain directories. */
  async releaseDisk(): Promise<void> {
    // From the layout, not the workspace's mount: a task that ended before its workspace was mountable (or
    // before its sandbox was made: a refusal, a diverged replay) may have mounted them already.
    const layout = taskLayout(this.options.repoRoot, this.options.taskId);
    await releaseCapVolume(path.join(layout.runDir, 'codex-home')).catch(() => undefined);
    await releaseCapVolume(layout.sandboxRepoPath).catch(() => undefined);
  }
}
