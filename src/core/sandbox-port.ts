/**
 * The sandbox port: the container a task runs in, the commands run in it, and what they return. Part of the
 * core's ports (src/core/ports.ts re-exports it); no library type appears here.
 */
import type { ContainerRuntime } from './records.js';
import type { OwnershipEntry, OwnershipPassReport } from './ownership.js';

export interface MountSpec {
  hostPath: string;
  containerPath: string;
  readOnly?: boolean;
}

/** How the container is networked. `none`: no interface but loopback. `bridge`: Docker's default bridge.
 * `network`: attach to a named network (the gateway's internal network, for example). */
export type SandboxNetwork = { mode: 'none' } | { mode: 'bridge' } | { mode: 'network'; name: string };

export interface SandboxSpec {
  taskId: string;
  /** The user's repository root, for the `agent-runner.repo` label. */
  repoPath: string;
  image: string;
  /**
   * Numeric user every exec runs as (the worker's). Never 0. The container's init and keeper run as another
   * uid the worker cannot signal (the runtime derives it), so ending every process of this uid is safe.
   */
  user: { uid: number; gid: number };
  mounts: MountSpec[];
  workdir: string;
  env: Record<string, string>;
  limits: { cpus: number; memoryBytes: number; pids: number };
  network: SandboxNetwork;
  /** `host:ip` pairs, e.g. `host.docker.internal:host-gateway`. */
  extraHosts?: string[];
  labels?: Record<string, string>;
  /**
   * The container's long-lived process (default `sleep infinity`). The gateway uses a shell that starts its
   * relay and then sleeps, so a killed relay does not stop the container.
   */
  keeper?: string[];
  /** The OCI runtime to create it with (default: the engine's default, runc). */
  runtime?: ContainerRuntime;
}

export interface SandboxInfo {
  id: string;
  name: string;
}

export interface ExecOptions {
  workdir?: string;
  env?: Record<string, string>;
  /** Run as this `uid:gid` instead of the sandbox's user (the runner's own set-up steps only). */
  user?: string;
  /**
   * An internal command that must start even when the worker's processes hold every pid of the sandbox's
   * limit (the reaper after a fork bomb): when its exec cannot start, the limit is raised while it runs.
   */
  roomInFullPidsLimit?: boolean;
  /** Required (worker files can block any exec: a FIFO at `.git/config`). Then SIGTERM, `graceMs`, SIGKILL; 124. */
  timeoutMs: number;
  graceMs?: number;
  /** Full output goes to these files; only tails are kept in memory. */
  stdoutPath?: string;
  stderrPath?: string;
  onStdoutLine?: (line: string) => void;
  onStderrLine?: (line: string) => void;
  /** Bytes of each stream kept in memory (default 8 KiB). */
  tailBytes?: number;
  /** Aborting stops the exec like a timeout does, but the result says `interrupted`. */
  signal?: AbortSignal;
}

/** How a process ended, for an exec and a worker run alike. A non-zero exit is data, not an exception. */
export interface ProcessEnd {
  exitCode: number;
  signal: string | null;
  timedOut: boolean;
  interrupted: boolean;
  oomKilled: boolean;
  durationMs: number;
}

/** A finished process. A non-zero exit is data, not an exception. */
export interface ExecResult extends ProcessEnd {
  stdoutTail: string;
  stderrTail: string;
}

/** How a sandbox's container ended, as the engine recorded it (`docker inspect`'s State and HostConfig.Runtime). */
export interface SandboxEnd {
  /** The engine's state: `exited`, `dead`, `running`, ... */
  state: string;
  /** -1 when the runtime cannot say (it only lists containers). */
  exitCode: number;
  /** What the engine or the OCI runtime recorded as the error ('' when nothing). */
  error: string;
  oomKilled: boolean;
  /** The OCI runtime it ran under (`runc` when the engine's default). */
  runtime: string;
}

export interface SandboxSummary {
  id: string;
  name: string;
  state: string;
  labels: Record<string, string>;
}

export type { OwnershipEntry, OwnershipPassReport, OwnershipSkipReason } from './ownership.js';

/** An ownership plan for a host directory, applied by a helper container (`SandboxRuntime.applyOwnership`). */
export interface OwnershipRequest {
  taskId: string;
  repoPath: string;
  image: string;
  hostDir: string;
  entries: readonly OwnershipEntry[];
}

export interface SandboxRuntime {
  /** Engine reachable? Returns its version; throws EnvironmentError('docker_unavailable') with the fix. */
  ping(): Promise<{ version: string }>;
  create(spec: SandboxSpec): Promise<SandboxInfo>;
  exec(sandboxId: string, argv: readonly string[], options: ExecOptions): Promise<ExecResult>;
  /** Stops and removes; no error when it is already gone. */
  remove(sandboxId: string): Promise<void>;
  /**
   * Stops a container without removing it: every process in it ends, its files stay (a kept sandbox, before
   * the host changes the directories it mounts). No error when it is already stopped or gone.
   */
  halt?(sandboxId: string): Promise<void>;
  /** How the container ended (its state when it has not): null when the engine no longer knows it. */
  ended?(sandboxId: string): Promise<SandboxEnd | null>;
  /** Containers whose labels include all of `labels`. */
  list(labels: Record<string, string>): Promise<SandboxSummary[]>;
  /**
   * Applies an ownership plan to a host directory with privileges the runner may lack (a runner that is not
   * root cannot chown). Paths of `entries` are relative to `hostDir`.
   */
  applyOwnership?(request: OwnershipRequest): Promise<OwnershipPassReport>;
  /**
   * Moves a running sandbox to `network`: leaves every network it is on, then joins `network` (nothing for
   * `none`, which leaves only loopback). Only for a sandbox created on `bridge` or a named network: Docker
   * cannot connect a container created with network mode `none`.
   */
  setNetwork?(sandboxId: string, network: SandboxNetwork): Promise<void>;
}
