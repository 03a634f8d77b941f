/**
 * The SandboxRuntime port on a Docker engine (dockerode): one long-lived hardened container per task, commands
 * run in it with `docker exec` semantics. The normal path costs what the Docker CLI costs: create + start for a
 * sandbox; exec create + start + inspect for a command. Nothing is inspected "just in case".
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type Docker from 'dockerode';
import type {
  ExecOptions,
  ExecResult,
  OwnershipPassReport,
  OwnershipRequest,
  SandboxEnd,
  SandboxInfo,
  SandboxNetwork,
  SandboxRuntime,
  SandboxSpec,
  SandboxSummary,
} from '../core/ports.js';
import { EnvironmentError, InternalError } from '../errors.js';
import {
  containerCreateOptions,
  dockerSocketPaths,
  SANDBOX_LABELS,
  userField,
  type SandboxOwner,
} from './container-options.js';
import { pingDocker } from './docker-client.js';
import { containerEnd } from './container-end.js';
import { blockLinkLocal } from './link-local-block.js';
import { applyOwnershipInContainer } from './ownership-helper.js';
import { EXEC_MARKER_VARIABLE } from './exec-killer.js';
import { OutputSink } from './exec-output.js';
import {
  capture,
  execResult,
  exitCodeOf,
  killMarked,
  messageOf,
  pumpUntilEnd,
  raisePidsLimit,
  signalFromExitCode,
  startExec,
  statusOf,
  type StartedExec,
} from './docker-exec.js';

/** Bytes of each stream kept in memory when the caller does not say. */
export const DEFAULT_TAIL_BYTES = 8 * 1024;
/** Grace between SIGTERM and SIGKILL when the caller does not say. */
export const DEFAULT_GRACE_MS = 10_000;
/** Exit codes a stopped exec reports, as `timeout(1)` and shells do. */
export const TIMEOUT_EXIT_CODE = 124;
export const INTERRUPTED_EXIT_CODE = 130;
const OOM_EXIT_CODE = 137;

export interface DockerSandboxRuntimeOptions {
  /** agent-runner's version, for the `agent-runner.version` label. */
  version: string;
  /** DOCKER_HOST and friends: for ping's message and to know which socket must never be mounted. */
  env?: NodeJS.ProcessEnv;
  /** Recorded as `agent-runner.pid` / `agent-runner.hostname` so a later run can tell orphans. Defaults: this process. */
  pid?: number;
  hostname?: string;
  /** Applied to output written to files (stdoutPath/stderrPath): keys and secrets stay out of the logs. */
  redact?: (text: string) => string;
  /** Seconds `remove` lets the container stop before it is killed (default 1). */
  stopTimeoutSeconds?: number;
}

/** {@link SandboxRuntime} on Docker. */
export class DockerSandboxRuntime implements SandboxRuntime {
  private readonly env: NodeJS.ProcessEnv;
  private readonly owner: SandboxOwner;
  private readonly stopTimeoutSeconds: number;
  private readonly redact: ((text: string) => string) | undefined;
  /** OOM kills seen in each sandbox so far, to tell whether the last exit 137 was one of them. */
  private readonly oomKills = new Map<string, number>();
  /** The `uid:gid` each sandbox's execs run as (its worker), from create or from its label. */
  private readonly execUsers = new Map<string, string | undefined>();

  constructor(
    private readonly docker: Docker,
    options: DockerSandboxRuntimeOptions,
  ) {
    this.env = options.env ?? process.env;
    this.owner = {
      version: options.version,
      pid: options.pid ?? process.pid,
      hostname: options.hostname ?? hostname(),
    };
    this.stopTimeoutSeconds = options.stopTimeoutSeconds ?? 1;
    this.redact = options.redact;
  }

  ping(): Promise<{ version: string }> {
    return pingDocker(this.docker, this.env);
  }

  async create(spec: SandboxSpec): Promise<SandboxInfo> {
    const options = containerCreateOptions(spec, this.owner, dockerSocketPaths(this.env));
    const name = options.name ?? '';
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer(options);
    } catch (error) {
      if (statusOf(error) === 404 && /image/i.test(messageOf(error))) {
        throw new EnvironmentError(
          'image_missing',
          `The sandbox image ${spec.image} is not on this Docker engine. Build it with \`agent-runner image build\` ` +
            '(or `docker build`), or set the image in agent-runner.yaml.',
          { cause: error },
        );
      }
      throw new EnvironmentError(
        'sandbox_failed',
        `Could not create the sandbox container for task ${spec.taskId}: ${messageOf(error)}`,
        { cause: error, details: { image: spec.image } },
      );
    }
    try {
      await container.start();
    } catch (error) {
      await container.remove({ force: true }).catch(() => undefined);
      throw new EnvironmentError(
        'sandbox_failed',
        `Could not start the sandbox container for task ${spec.taskId}: ${messageOf(error)}. ` +
          'Check that the mounted paths exist and the named network is there (`docker network ls`).',
        { cause: error, details: { image: spec.image } },
      );
    }
    if (spec.network.mode !== 'none') {
      // On a Docker network the sandbox could reach cloud metadata (link-local); the routes that stop it are
      // in place before anything runs in it, or the sandbox is not used at all.
      try {
        await blockLinkLocal(this.docker, this.owner, {
          sandboxId: container.id,
          image: spec.image,
          taskId: spec.taskId,
          repoPath: spec.repoPath,
          ...(spec.runtime ? { runtime: spec.runtime } : {}),
        });
      } catch (error) {
        await container.remove({ force: true }).catch(() => undefined);
        throw error;
      }
    }
    // A fresh container's cgroup has seen no OOM kill.
    this.oomKills.set(container.id, 0);
    this.execUsers.set(container.id, userField(spec.user));
    return { id: container.id, name };
  }

  async exec(sandboxId: string, argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
    if (argv.length === 0) throw new InternalError('SandboxRuntime.exec needs a command (argv is empty).');
    // The container's own user is the keeper's: an exec that names none runs as the sandbox's worker.
    const resolved = { ...options, user: options.user ?? (await this.execUser(sandboxId)) };
    const result = await this.execAs(sandboxId, argv, resolved);
    if (result.exitCode !== 126 || !options.roomInFullPidsLimit) return result;
    // 126: the exec could not start, most likely because the worker's processes hold every pid (a fork bomb).
    const restore = await raisePidsLimit(this.docker, sandboxId).catch(() => null);
    if (restore === null) return result;
    try {
      return await this.execAs(sandboxId, argv, resolved);
    } finally {
      await restore().catch(() => undefined);
    }
  }

  /** The worker's `uid:gid` of a sandbox: recorded at create, else read once from its label. */
  private async execUser(sandboxId: string): Promise<string | undefined> {
    if (this.execUsers.has(sandboxId)) return this.execUsers.get(sandboxId);
    const info = await this.docker
      .getContainer(sandboxId)
      .inspect()
      .catch(() => null);
    // No label: a container made before the keeper had a uid of its own, whose user is the worker's.
    const user = info?.Config.Labels?.[SANDBOX_LABELS.user];
    if (info) this.execUsers.set(sandboxId, user);
    return user;
  }

  private async execAs(
    sandboxId: string,
    argv: readonly string[],
    options: ExecOptions,
  ): Promise<ExecResult> {
    const startedAt = performance.now();
    const tailBytes = options.tailBytes ?? DEFAULT_TAIL_BYTES;
    const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    const redact = this.redact;
    const stdout = await OutputSink.open({
      filePath: options.stdoutPath,
      onLine: options.onStdoutLine,
      tailBytes,
      ...(redact ? { redact } : {}),
    });
    const stderr = await OutputSink.open({
      filePath: options.stderrPath,
      onLine: options.onStderrLine,
      tailBytes,
      ...(redact ? { redact } : {}),
    });
    const closeSinks = async (): Promise<void> => {
      await Promise.all([stdout.close(), stderr.close()]);
    };

    if (options.signal?.aborted) {
      await closeSinks();
      // Nothing was started, so nothing was signalled.
      return {
        ...execResult(INTERRUPTED_EXIT_CODE, 'interrupt', false, startedAt, stdout, stderr),
        signal: null,
      };
    }

    const marker = randomUUID();
    const env = { ...options.env, [EXEC_MARKER_VARIABLE]: marker };
    let started: StartedExec;
    try {
      started = await startExec(this.docker, sandboxId, argv, env, options.user, options.workdir);
    } catch (error) {
      await closeSinks().catch(() => undefined);
      throw error;
    }

    const { pumpError, stopReason: reason } = await pumpUntilEnd(started, stdout, stderr, options, () =>
      killMarked(this.docker, sandboxId, marker, options.user, graceMs),
    );
    await closeSinks();

    if (pumpError !== null && reason === null) {
      throw new EnvironmentError(
        'sandbox_failed',
        `Lost the output of \`${argv.join(' ')}\` in sandbox ${sandboxId}: ${messageOf(pumpError)}`,
        { cause: pumpError, retryable: true },
      );
    }
    const exitCode = await exitCodeOf(started.exec, reason === null ? 100 : 10);
    if (reason !== null) {
      const result = execResult(
        reason === 'timeout' ? TIMEOUT_EXIT_CODE : INTERRUPTED_EXIT_CODE,
        reason,
        false,
        startedAt,
        stdout,
        stderr,
      );
      return { ...result, signal: (exitCode === null ? null : signalFromExitCode(exitCode)) ?? 'SIGTERM' };
    }
    if (exitCode === null) {
      throw new EnvironmentError(
        'sandbox_failed',
        `Docker did not report the exit code of \`${argv.join(' ')}\` in sandbox ${sandboxId}.`,
        { retryable: true },
      );
    }
    const oomKilled = exitCode === OOM_EXIT_CODE && (await this.sawNewOomKill(sandboxId));
    return execResult(exitCode, null, oomKilled, startedAt, stdout, stderr);
  }

  async remove(sandboxId: string): Promise<void> {
    const container = this.docker.getContainer(sandboxId);
    this.oomKills.delete(sandboxId);
    this.execUsers.delete(sandboxId);
    try {
      await container.stop({ t: this.stopTimeoutSeconds });
    } catch (error) {
      // 304: already stopped; 404: already gone. Anything else: removal with force still ends it.
      if (statusOf(error) === 404) return;
    }
    try {
      await container.remove({ force: true, v: true });
    } catch (error) {
      const status = statusOf(error);
      // 409 "removal already in progress" ends the same way.
      if (status === 404 || status === 409) return;
      throw new EnvironmentError(
        'sandbox_failed',
        `Could not remove sandbox ${sandboxId}: ${messageOf(error)}`,
        {
          cause: error,
          retryable: true,
        },
      );
    }
  }

  /** See SandboxRuntime.halt: SIGKILL at once (nothing in a kept sandbox is worth a grace period), files stay. */
  async halt(sandboxId: string): Promise<void> {
    this.oomKills.delete(sandboxId);
    try {
      await this.docker.getContainer(sandboxId).stop({ t: 0 });
    } catch (error) {
      // 304: already stopped; 404: already gone.
      const status = statusOf(error);
      if (status === 304 || status === 404) return;
      throw new EnvironmentError(
        'sandbox_failed',
        `Could not stop sandbox ${sandboxId}: ${messageOf(error)}`,
        {
          cause: error,
          retryable: true,
        },
      );
    }
  }

  /** See SandboxRuntime.applyOwnership: a short-lived helper container that may chown, nothing more. */
  applyOwnership(request: OwnershipRequest): Promise<OwnershipPassReport> {
    return applyOwnershipInContainer(this.docker, this.owner, request);
  }

  /** See SandboxRuntime.ended. */
  ended(sandboxId: string): Promise<SandboxEnd | null> {
    return containerEnd(this.docker, sandboxId);
  }

  async list(labels: Record<string, string>): Promise<SandboxSummary[]> {
    const containers = await this.docker.listContainers({
      all: true,
      filters: { label: Object.entries(labels).map(([key, value]) => `${key}=${value}`) },
    });
    return containers.map((container) => ({
      id: container.Id,
      name: (container.Names[0] ?? '').replace(/^\//, ''),
      state: container.State,
      labels: container.Labels,
    }));
  }

  async setNetwork(sandboxId: string, network: SandboxNetwork): Promise<void> {
    const target = network.mode === 'none' ? null : network.mode === 'bridge' ? 'bridge' : network.name;
    try {
      const info = await this.docker.getContainer(sandboxId).inspect();
      const current = Object.keys(info.NetworkSettings.Networks ?? {});
      for (const name of current) {
        // A container created with mode `none` lists the `none` network, which it can never leave.
        if (name === target || (target === null && name === 'none')) continue;
        await this.docker.getNetwork(name).disconnect({ Container: sandboxId, Force: true });
      }
      if (target !== null && !current.includes(target)) {
        await this.docker.getNetwork(target).connect({ Container: sandboxId });
      }
    } catch (error) {
      throw new EnvironmentError(
        'sandbox_failed',
        `Could not move sandbox ${sandboxId} to network ${target ?? 'none'}: ${messageOf(error)}. ` +
          'A sandbox created with network mode none cannot join a network; create it on bridge.',
        { cause: error, details: { sandboxId } },
      );
    }
  }

  /**
   * Whether the kernel OOM-killed something in the sandbox since the last look. The cgroup's own counter
   * (`oom_kill` in memory.events on cgroup v2, memory.oom_control on v1) is read with one cheap exec, only
   * after an exit 137. Docker's `State.OOMKilled` is the fallback: it is sticky for the container's life, so
   * after a first OOM it would call every later SIGKILL an OOM; the counter tells them apart.
   */
  private async sawNewOomKill(sandboxId: string): Promise<boolean> {
    let count: number | null = null;
    try {
      const read = await capture(
        this.docker,
        sandboxId,
        [
          '/bin/sh',
          '-c',
          'cat /sys/fs/cgroup/memory.events 2>/dev/null || cat /sys/fs/cgroup/memory/memory.oom_control',
        ],
        10_000,
      );
      const match = /^oom_kill (\d+)$/m.exec(read.stdout);
      if (match?.[1] !== undefined) count = Number(match[1]);
    } catch {
      count = null;
    }
    if (count !== null) {
      const before = this.oomKills.get(sandboxId);
      this.oomKills.set(sandboxId, count);
      return before === undefined ? count > 0 : count > before;
    }
    try {
      const info = await this.docker.getContainer(sandboxId).inspect();
      return info.State.OOMKilled;
    } catch {
      return false;
    }
  }
}
