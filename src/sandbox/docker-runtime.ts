/**
 * The SandboxRuntime port on a Docker engine (dockerode): one long-lived hardened container per task, commands
 * run in it with `docker exec` semantics. The normal path costs what the Docker CLI costs: create + start for a
 * sandbox; exec create + start + inspect for a command. Nothing is inspected "just in case".
 */
import { randomUUID } from 'node:crypto';
import { constants as osConstants, hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type {
  ExecOptions,
  ExecResult,
  SandboxInfo,
  SandboxNetwork,
  SandboxRuntime,
  SandboxSpec,
  SandboxSummary,
} from '../core/ports.js';
import { EnvironmentError, InternalError } from '../errors.js';
import { containerCreateOptions, dockerSocketPaths, type SandboxOwner } from './container-options.js';
import { pingDocker } from './docker-client.js';
import { blockLinkLocal } from './link-local-block.js';
import { applyOwnershipInContainer, type OwnershipHelperRequest } from './ownership-helper.js';
import { EXEC_MARKER_VARIABLE, killerArgv } from './exec-killer.js';
import { OutputSink, pumpDockerStream } from './exec-output.js';

/** Bytes of each stream kept in memory when the caller does not say. */
export const DEFAULT_TAIL_BYTES = 8 * 1024;
/** Grace between SIGTERM and SIGKILL when the caller does not say. */
export const DEFAULT_GRACE_MS = 10_000;
/** Exit codes a stopped exec reports, as `timeout(1)` and shells do. */
export const TIMEOUT_EXIT_CODE = 124;
export const INTERRUPTED_EXIT_CODE = 130;
const OOM_EXIT_CODE = 137;

/** After the killer is done, how long the output stream may take to close before it is cut. */
const STREAM_CLOSE_AFTER_KILL_MS = 5_000;
/** How often the killer is retried when its own exec cannot start (a full pids limit, a busy engine). */
const KILLER_ATTEMPTS = 5;
/** Pids added to a full limit while the killer runs (it needs one or two; a retrying bomb may take some). */
const PIDS_ROOM_FOR_KILLER = 32;

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

interface StartedExec {
  exec: Docker.Exec;
  stream: Duplex;
}

/** A small command's output and exit code (the killer, the OOM counter). */
interface CapturedExec {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

type StopReason = 'timeout' | 'interrupt';

/** A Docker error's HTTP status, when dockerode saw one. */
function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `SIGKILL` for 137: Docker and shells report a process ended by signal n as 128 + n. */
function signalFromExitCode(exitCode: number): string | null {
  if (exitCode <= 128) return null;
  const number = exitCode - 128;
  const entry = Object.entries(osConstants.signals).find(([, value]) => value === number);
  return entry ? entry[0] : null;
}

/** {@link SandboxRuntime} on Docker. */
export class DockerSandboxRuntime implements SandboxRuntime {
  private readonly env: NodeJS.ProcessEnv;
  private readonly owner: SandboxOwner;
  private readonly stopTimeoutSeconds: number;
  private readonly redact: ((text: string) => string) | undefined;
  /** OOM kills seen in each sandbox so far, to tell whether the last exit 137 was one of them. */
  private readonly oomKills = new Map<string, number>();

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
        });
      } catch (error) {
        await container.remove({ force: true }).catch(() => undefined);
        throw error;
      }
    }
    // A fresh container's cgroup has seen no OOM kill.
    this.oomKills.set(container.id, 0);
    return { id: container.id, name };
  }

  async exec(sandboxId: string, argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (argv.length === 0) throw new InternalError('SandboxRuntime.exec needs a command (argv is empty).');
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
        ...this.result(INTERRUPTED_EXIT_CODE, 'interrupt', false, startedAt, stdout, stderr),
        signal: null,
      };
    }

    const marker = randomUUID();
    const env = { ...options.env, [EXEC_MARKER_VARIABLE]: marker };
    let started: StartedExec;
    try {
      started = await this.startExec(sandboxId, argv, env, options.user, options.workdir);
    } catch (error) {
      await closeSinks().catch(() => undefined);
      throw error;
    }

    const pump = pumpDockerStream(started.stream, stdout, stderr);
    let stopReason: StopReason | null = null;
    let stopping: Promise<void> | null = null;
    const stop = (reason: StopReason): void => {
      if (stopReason !== null) return;
      stopReason = reason;
      stopping = (async () => {
        await this.killMarked(sandboxId, marker, options.user, graceMs);
        // Everything marked is gone; if the stream still does not close (the killer could not run, say), cut it
        // so a stuck engine cannot hold the runner.
        const closed = await Promise.race([
          pump.then(
            () => true,
            () => true,
          ),
          delay(STREAM_CLOSE_AFTER_KILL_MS, false),
        ]);
        if (!closed) started.stream.destroy();
      })();
    };
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => stop('timeout'), Math.max(0, options.timeoutMs));
    const onAbort = (): void => stop('interrupt');
    options.signal?.addEventListener('abort', onAbort, { once: true });

    let pumpError: unknown = null;
    try {
      await pump;
    } catch (error) {
      pumpError = error;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
    // The stream can end (Docker closes it about 2 s after the main process exits) while a descendant that
    // escaped into its own session still runs; a stopped exec waits for the killer to finish the job.
    if (stopping !== null) await stopping;
    await closeSinks();

    const reason = stopReason as StopReason | null;
    if (pumpError !== null && reason === null) {
      throw new EnvironmentError(
        'sandbox_failed',
        `Lost the output of \`${argv.join(' ')}\` in sandbox ${sandboxId}: ${messageOf(pumpError)}`,
        { cause: pumpError, retryable: true },
      );
    }
    const exitCode = await this.exitCodeOf(started.exec, reason === null ? 100 : 10);
    if (reason !== null) {
      const result = this.result(
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
    return this.result(exitCode, null, oomKilled, startedAt, stdout, stderr);
  }

  async remove(sandboxId: string): Promise<void> {
    const container = this.docker.getContainer(sandboxId);
    this.oomKills.delete(sandboxId);
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

  /** See SandboxRuntime.applyOwnership: a short-lived helper container that may chown, nothing more. */
  applyOwnership(request: OwnershipHelperRequest): Promise<void> {
    return applyOwnershipInContainer(this.docker, this.owner, request);
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

  private result(
    exitCode: number,
    stopReason: StopReason | null,
    oomKilled: boolean,
    startedAt: number,
    stdout: OutputSink,
    stderr: OutputSink,
  ): ExecResult {
    return {
      exitCode,
      signal: oomKilled ? 'SIGKILL' : signalFromExitCode(exitCode),
      timedOut: stopReason === 'timeout',
      interrupted: stopReason === 'interrupt',
      oomKilled,
      durationMs: Math.round(performance.now() - startedAt),
      stdoutTail: stdout.tail.toString(),
      stderrTail: stderr.tail.toString(),
    };
  }

  /** exec create + start; stdin is never attached (codex waits for EOF on an open stdin). */
  private async startExec(
    sandboxId: string,
    argv: readonly string[],
    env: Record<string, string>,
    user: string | undefined,
    workdir: string | undefined,
  ): Promise<StartedExec> {
    try {
      const exec = await this.docker.getContainer(sandboxId).exec({
        Cmd: [...argv],
        AttachStdin: false,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
        ...(user === undefined ? {} : { User: user }),
        ...(workdir === undefined ? {} : { WorkingDir: workdir }),
      });
      const stream = await exec.start({ hijack: true, stdin: false });
      return { exec, stream };
    } catch (error) {
      const status = statusOf(error);
      throw new EnvironmentError(
        'sandbox_failed',
        status === 404 || status === 409
          ? `Sandbox ${sandboxId} is gone or not running (${messageOf(error)}); the task cannot continue in it.`
          : `Could not run \`${argv[0]}\` in sandbox ${sandboxId}: ${messageOf(error)}`,
        { cause: error, details: { sandboxId, status } },
      );
    }
  }

  /**
   * The exit code from exec inspect. Docker may close the stream a moment before it records the exit, so this
   * polls briefly; null when it never says (the process is still running after a failed kill).
   */
  private async exitCodeOf(exec: Docker.Exec, attempts: number): Promise<number | null> {
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      const info = await exec.inspect();
      if (!info.Running && info.ExitCode !== null) return info.ExitCode;
      await delay(attempt < 10 ? 10 : 50);
    }
    return null;
  }

  /** Runs a small internal command to completion and keeps its output (bounded). */
  private async capture(sandboxId: string, argv: readonly string[], user?: string): Promise<CapturedExec> {
    const stdout = await OutputSink.open({ tailBytes: 64 * 1024 });
    const stderr = await OutputSink.open({ tailBytes: 64 * 1024 });
    const started = await this.startExec(sandboxId, argv, {}, user, '/');
    await pumpDockerStream(started.stream, stdout, stderr);
    await Promise.all([stdout.close(), stderr.close()]);
    return {
      exitCode: await this.exitCodeOf(started.exec, 100),
      stdout: stdout.tail.toString(),
      stderr: stderr.tail.toString(),
    };
  }

  /**
   * SIGTERM to every process of the exec, `graceMs` while any survives, then SIGKILL (see exec-killer.ts). Runs
   * as the exec's user so it can read and signal exactly that user's processes. Never throws: a killer that
   * cannot run leaves the stream cut-off in `exec` as the last resort.
   */
  private async killMarked(
    sandboxId: string,
    marker: string,
    user: string | undefined,
    graceMs: number,
  ): Promise<void> {
    let interpreter: '/bin/bash' | '/bin/sh' = '/bin/bash';
    let restoreLimit: (() => Promise<void>) | null = null;
    try {
      for (let attempt = 0; attempt < KILLER_ATTEMPTS; attempt += 1) {
        try {
          const result = await this.capture(sandboxId, killerArgv(interpreter, marker, graceMs), user);
          if (result.exitCode === 0 || result.exitCode === 3) return;
          if (result.exitCode === 126 && restoreLimit === null) {
            // The exec could not start: a full pids limit (a fork bomb) leaves no pid for the killer. The limit
            // is raised for as long as the killer needs, then set back.
            restoreLimit = await this.raisePidsLimit(sandboxId);
            continue;
          }
          // 126/127 again: no bash in this image: the sh version next.
          if ((result.exitCode === 126 || result.exitCode === 127) && interpreter === '/bin/bash') {
            interpreter = '/bin/sh';
            continue;
          }
        } catch (error) {
          // The sandbox is gone: nothing is left to kill.
          if (error instanceof EnvironmentError && [404, 409].includes(Number(error.details.status))) return;
        }
        await delay(200 * (attempt + 1));
      }
    } finally {
      await restoreLimit?.().catch(() => undefined);
    }
  }

  /** Raises the sandbox's pids limit by PIDS_ROOM_FOR_KILLER; returns how to set it back (a no-op without one). */
  private async raisePidsLimit(sandboxId: string): Promise<() => Promise<void>> {
    const container = this.docker.getContainer(sandboxId);
    const limit = (await container.inspect().catch(() => null))?.HostConfig?.PidsLimit ?? 0;
    if (!limit || limit <= 0) return async () => {};
    await container.update({ PidsLimit: limit + PIDS_ROOM_FOR_KILLER });
    return async () => {
      await container.update({ PidsLimit: limit });
    };
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
      const read = await this.capture(sandboxId, [
        '/bin/sh',
        '-c',
        'cat /sys/fs/cgroup/memory.events 2>/dev/null || cat /sys/fs/cgroup/memory/memory.oom_control',
      ]);
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
