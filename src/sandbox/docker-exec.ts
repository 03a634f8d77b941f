/**
 * One `docker exec` on dockerode: starting it, pumping its output until its stream ends or it is stopped,
 * killing every process it started, and reading its exit code. DockerSandboxRuntime builds its exec on these.
 */
import { constants as osConstants } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { ExecOptions, ExecResult } from '../core/ports.js';
import { EnvironmentError } from '../errors.js';
import { killerArgv } from './exec-killer.js';
import { OutputSink, pumpDockerStream } from './exec-output.js';

/** After the killer is done, how long the output stream may take to close before it is cut. */
const STREAM_CLOSE_AFTER_KILL_MS = 5_000;
/** What the killer may take beyond its grace (SIGKILL, waiting for the pids to be free) before it is cut. */
const KILLER_REAP_MS = 30_000;
/** How often the killer is retried when its own exec cannot start (a full pids limit, a busy engine). */
const KILLER_ATTEMPTS = 5;
/** Pids added to a full limit while the killer runs (it needs one or two; a retrying bomb may take some). */
const PIDS_ROOM_FOR_KILLER = 32;

export interface StartedExec {
  exec: Docker.Exec;
  stream: Duplex;
}

/** A small command's output and exit code (the killer, the OOM counter). */
export interface CapturedExec {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export type StopReason = 'timeout' | 'interrupt';

/** How an exec's output pump ended: its error, if any, and why the exec was stopped (null: it was not). */
export interface PumpOutcome {
  pumpError: unknown;
  stopReason: StopReason | null;
}

/** A Docker error's HTTP status, when dockerode saw one. */
export function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** An error's message, whatever was thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** exec create + start; stdin is never attached (codex waits for EOF on an open stdin). */
export async function startExec(
  docker: Docker,
  sandboxId: string,
  argv: readonly string[],
  env: Record<string, string>,
  user: string | undefined,
  workdir: string | undefined,
): Promise<StartedExec> {
  try {
    const exec = await docker.getContainer(sandboxId).exec({
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
 * Pumps a started exec's output into its sinks until the stream ends. A timeout or an abort stops the exec:
 * `kill` ends its processes, then the stream is cut if it still does not close.
 */
export async function pumpUntilEnd(
  started: StartedExec,
  stdout: OutputSink,
  stderr: OutputSink,
  options: Pick<ExecOptions, 'timeoutMs' | 'signal'>,
  kill: () => Promise<void>,
): Promise<PumpOutcome> {
  const pump = pumpDockerStream(started.stream, stdout, stderr);
  let stopReason: StopReason | null = null;
  let stopping: Promise<void> | null = null;
  const stop = (reason: StopReason): void => {
    if (stopReason !== null) return;
    stopReason = reason;
    stopping = (async () => {
      await kill();
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
  const timer = setTimeout(() => stop('timeout'), Math.max(0, options.timeoutMs));
  const onAbort = (): void => stop('interrupt');
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // A signal that fired while the exec was being created (the task's deadline passing during that round trip
  // to the engine) sends no event any more: without this look the exec ran to its own limit.
  if (options.signal?.aborted) onAbort();

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
  return { pumpError, stopReason: stopReason as StopReason | null };
}

/**
 * The exit code from exec inspect. Docker may close the stream a moment before it records the exit, so this
 * polls briefly; null when it never says (the process is still running after a failed kill).
 */
export async function exitCodeOf(exec: Docker.Exec, attempts: number): Promise<number | null> {
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    const info = await exec.inspect();
    if (!info.Running && info.ExitCode !== null) return info.ExitCode;
    await delay(attempt < 10 ? 10 : 50);
  }
  return null;
}

/**
 * Runs a small internal command to completion and keeps its output (bounded). It has no killer of its own (it
 * is the killer's exec), so after `timeoutMs` its stream is cut and its exit code is unknown (null): nothing
 * the runner waits on is without a limit.
 */
export async function capture(
  docker: Docker,
  sandboxId: string,
  argv: readonly string[],
  timeoutMs: number,
  user?: string,
): Promise<CapturedExec> {
  const stdout = await OutputSink.open({ tailBytes: 64 * 1024 });
  const stderr = await OutputSink.open({ tailBytes: 64 * 1024 });
  const started = await startExec(docker, sandboxId, argv, {}, user, '/');
  // The limit's timer is cancelled when the command ends: a pending one would keep the runner's process alive.
  const cancel = new AbortController();
  const ended = await Promise.race([
    pumpDockerStream(started.stream, stdout, stderr).then(
      () => true,
      () => true,
    ),
    delay(timeoutMs, false, { signal: cancel.signal, ref: false }).catch(() => true),
  ]);
  cancel.abort();
  if (!ended) started.stream.destroy();
  await Promise.all([stdout.close(), stderr.close()]);
  return {
    exitCode: ended ? await exitCodeOf(started.exec, 100) : null,
    stdout: stdout.tail.toString(),
    stderr: stderr.tail.toString(),
  };
}

/**
 * SIGTERM to every process of the exec, `graceMs` while any survives, then SIGKILL (see exec-killer.ts). Runs
 * as the exec's user so it can read and signal exactly that user's processes. Never throws: a killer that
 * cannot run leaves the stream cut-off in `pumpUntilEnd` as the last resort.
 */
export async function killMarked(
  docker: Docker,
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
        const result = await capture(
          docker,
          sandboxId,
          killerArgv(interpreter, marker, graceMs),
          graceMs + KILLER_REAP_MS,
          user,
        );
        if (result.exitCode === 0 || result.exitCode === 3) return;
        if (result.exitCode === 126 && restoreLimit === null) {
          // The exec could not start: a full pids limit (a fork bomb) leaves no pid for the killer. The limit
          // is raised for as long as the killer needs, then set back.
          restoreLimit = await raisePidsLimit(docker, sandboxId);
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
export async function raisePidsLimit(docker: Docker, sandboxId: string): Promise<() => Promise<void>> {
  const container = docker.getContainer(sandboxId);
  const limit = (await container.inspect().catch(() => null))?.HostConfig?.PidsLimit ?? 0;
  if (!limit || limit <= 0) return async () => {};
  await container.update({ PidsLimit: limit + PIDS_ROOM_FOR_KILLER });
  return async () => {
    await container.update({ PidsLimit: limit });
  };
}

/** `SIGKILL` for 137: Docker and shells report a process ended by signal n as 128 + n. */
export function signalFromExitCode(exitCode: number): string | null {
  if (exitCode <= 128) return null;
  const number = exitCode - 128;
  const entry = Object.entries(osConstants.signals).find(([, value]) => value === number);
  return entry ? entry[0] : null;
}

/** A finished exec as the port reports it: exit code, signal, how it stopped, duration and both tails. */
export function execResult(
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
