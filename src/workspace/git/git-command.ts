/**
 * Running host `git`. Every call gets a clean environment (no inherited GIT_DIR, GIT_INDEX_FILE, ...) so
 * a runner started from a git hook or another tool cannot point our commands at the wrong repository, and
 * the settings of host-git-settings.ts (no filter, driver, hook, fsmonitor or signing program runs, whoever
 * configured it). Every call is bounded in time: git runs in a process group of its own, and when it is not
 * done in time the whole group (an upload-pack blocked on a FIFO included) is stopped and the call fails with
 * a `workspace_failed` error that says so.
 *
 * git is started with node:child_process rather than execa: every start of `run` makes several git calls
 * before its first Meta-agent request, and execa's modules cost more CPU to load than those calls take.
 */
import { spawn } from 'node:child_process';
import { AgentRunnerError } from '../../errors.js';
import {
  CONFIGURED_PROGRAMS_PATTERN,
  HOST_GIT_SETTINGS,
  LINKS_AS_FILES,
  configuredPrograms,
  inertPrograms,
  mayApplyAttributes,
  settingsEnvironment,
  withoutDiffPrograms,
  type ConfiguredPrograms,
  type GitSetting,
} from './host-git-settings.js';

/** How long one host git call may take unless the caller says otherwise (the task's wall clock still applies). */
export const HOST_GIT_TIMEOUT_MS = 5 * 60_000;
/** How long a stopped git's process group has between SIGTERM (git removes its lock files) and SIGKILL. */
export const HOST_GIT_KILL_GRACE_MS = 2_000;

export interface GitCommandOptions {
  cwd: string;
  /** Added to the cleaned environment (GIT_INDEX_FILE for a temporary index, GIT_AUTHOR_* for replay). */
  env?: Record<string, string>;
  input?: string;
  /** Configuration in git's command-line scope; the settings of host-git-settings.ts win over it. */
  config?: Record<string, string>;
  /** Default {@link HOST_GIT_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Default {@link HOST_GIT_MAX_OUTPUT_BYTES}. */
  maxOutputBytes?: number;
  /**
   * Check links out as links. Only for the sandbox repository's first checkout: the person's own tree before
   * any worker ran, where the project's links must work. Everywhere else links become plain files.
   */
  keepSymlinks?: boolean;
  /**
   * Ctrl-C, SIGTERM or the task's wall clock: when it fires, git's whole process group is stopped as at its time
   * limit and the call fails with a `workspace_failed` error that says it was cut.
   */
  signal?: AbortSignal;
}

export interface GitCommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** The process environment without any GIT_* variable, plus settings that keep git non-interactive. */
export function cleanGitEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('GIT_')) env[key] = value;
  }
  return { ...env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', LC_ALL: 'C', ...extra };
}

/** One finished (or stopped) git process. */
interface BoundedResult extends GitCommandResult {
  /**
   * Set when git did not end on its own: stopped at its time limit, cut by the caller's abort signal, or killed
   * by someone else.
   */
  stopped: { timedOut: boolean; aborted: boolean; signal: string | null; overflowed?: boolean } | null;
}

/**
 * The most output (stdout and stderr) one git call may give; past it git is stopped (SIGTERM) and the call fails
 * as a killed one, so a huge diff or blob a worker committed cannot fill the runner's memory.
 */
export const HOST_GIT_MAX_OUTPUT_BYTES = 100 * 1024 * 1024;

/** How one git process ended: its code or signal and its output (UTF-8); a git that could not start has neither. */
interface GitProcessResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Its output passed the cap: what was read is cut, whatever git's exit says (it may finish before the kill). */
  overflowed: boolean;
}

/** Starts git as the leader of a process group of its own; `done` resolves once it has ended and its output is read. */
function spawnGit(
  argv: readonly string[],
  options: { cwd: string; env: Record<string, string>; input?: string | undefined; maxOutputBytes: number },
): { pid: number | undefined; done: Promise<GitProcessResult> } {
  const child = spawn('git', argv, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  let bytes = 0;
  let overflowed = false;
  const collect = (into: Buffer[]) => (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > options.maxOutputBytes) {
      overflowed = true;
      child.kill('SIGTERM');
    } else into.push(chunk);
  };
  child.stdout?.on('data', collect(stdout));
  child.stderr?.on('data', collect(stderr));
  // git may exit without reading all of its input (EPIPE): its exit code says what happened.
  child.stdin?.on('error', () => undefined);
  child.stdin?.end(options.input);
  const done = new Promise<GitProcessResult>((resolve) => {
    child.once('error', (error) =>
      resolve({ exitCode: null, signal: null, stdout: '', stderr: error.message, overflowed: false }),
    );
    child.once('close', (exitCode, signal) =>
      resolve({
        exitCode,
        signal,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
        overflowed,
      }),
    );
  });
  return { pid: child.pid, done };
}

/** Process groups of git calls still running; stopped when the runner exits before they end. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Sends `signal` to the process group `pid` leads; a group that is gone already is fine. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: every process of the group has ended.
  }
}

/** Makes sure no git process group outlives the runner (a hung upload-pack would otherwise stay forever). */
function stopLiveGroupsOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const pid of liveGroups) signalGroup(pid, 'SIGTERM');
  });
}

/**
 * The time limit of the process group `pid` leads: at `timeoutMs` SIGTERM (git removes its lock files), and
 * {@link HOST_GIT_KILL_GRACE_MS} later SIGKILL for whatever is left of it (a child that still holds git's
 * output open included). `stopping()` is null until the limit is reached, then resolves once the SIGKILL is sent.
 */
function groupDeadline(pid: number | undefined, timeoutMs: number, signal?: AbortSignal) {
  let stopping: Promise<void> | null = null;
  let aborted = false;
  const stop = () => {
    if (pid === undefined || stopping !== null) return;
    signalGroup(pid, 'SIGTERM');
    stopping = new Promise((resolve) =>
      setTimeout(() => resolve(signalGroup(pid, 'SIGKILL')), HOST_GIT_KILL_GRACE_MS),
    );
  };
  const timer = setTimeout(stop, timeoutMs);
  // The caller's abort ends the group the same way: a replay or a fetch must not outlive Ctrl-C or the wall clock.
  const onAbort = () => {
    aborted = true;
    stop();
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  return {
    cancel: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
    stopping: (): Promise<void> | null => stopping,
    aborted: () => aborted,
  };
}

/** Runs git in a process group of its own, within `timeoutMs`; a stopped call returns once its group is gone. */
async function runBounded(
  argv: readonly string[],
  options: {
    cwd: string;
    env: Record<string, string>;
    input?: string;
    timeoutMs: number;
    maxOutputBytes?: number | undefined;
    signal?: AbortSignal | undefined;
  },
): Promise<BoundedResult> {
  stopLiveGroupsOnExit();
  const subprocess = spawnGit(argv, {
    ...options,
    maxOutputBytes: options.maxOutputBytes ?? HOST_GIT_MAX_OUTPUT_BYTES,
  });
  const pid = subprocess.pid;
  if (pid !== undefined) liveGroups.add(pid);
  const deadline = groupDeadline(pid, options.timeoutMs, options.signal);
  const result = await subprocess.done;
  deadline.cancel();
  const stopping = deadline.stopping();
  if (stopping !== null) await stopping;
  if (pid !== undefined) liveGroups.delete(pid);
  const aborted = deadline.aborted();
  const timedOut = stopping !== null && !aborted;
  // A git whose output passed the cap was stopped even when it exited 0 before the signal reached it: its
  // output is cut, so the call is never a success.
  const signal = result.signal ?? (result.overflowed ? 'SIGTERM' : null);
  const exitCode = result.exitCode ?? 1;
  // A git that got SIGTERM removes its lock files and re-raises it; one that finished at the limit is done.
  const stopped = signal !== null || (stopping !== null && exitCode !== 0);
  return {
    exitCode,
    stdout: result.stdout,
    stderr: result.stderr,
    stopped: stopped ? { timedOut, aborted, signal, overflowed: result.overflowed } : null,
  };
}

/** The error of a git call that did not end on its own. */
function stoppedError(
  args: readonly string[],
  options: GitCommandOptions,
  timeoutMs: number,
  stopped: NonNullable<BoundedResult['stopped']>,
): AgentRunnerError {
  const how = stopped.aborted
    ? 'was cut (interrupted, or the task ran out of time)'
    : stopped.timedOut
      ? `did not finish within ${Math.round(timeoutMs / 100) / 10} s and was stopped`
      : stopped.overflowed
        ? `gave more output than its cap allows and was killed (${stopped.signal})`
        : `was killed (${stopped.signal})`;
  return new AgentRunnerError('workspace_failed', `git ${args.join(' ')} in ${options.cwd} ${how}.`, {
    details: {
      args,
      cwd: options.cwd,
      timedOut: stopped.timedOut,
      aborted: stopped.aborted,
      signal: stopped.signal,
      timeoutMs,
    },
  });
}

/**
 * Every filter and merge driver configured in a scope a call in `options.cwd` with `env` reads, asked of git
 * itself. Exit 1 means none; any other failure means git cannot read the configuration, and the call itself
 * fails the same way.
 */
async function configuredProgramsFor(
  options: GitCommandOptions,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<ConfiguredPrograms> {
  const args = ['config', '--null', '--name-only', '--get-regexp', CONFIGURED_PROGRAMS_PATTERN];
  const listed = await runBounded(args, { cwd: options.cwd, env, timeoutMs, signal: options.signal });
  if (listed.stopped) throw stoppedError(args, options, timeoutMs, listed.stopped);
  return configuredPrograms(listed.exitCode === 0 ? listed.stdout : '');
}

/**
 * The settings of one call in git's command-line scope: the caller's, then those of host-git-settings.ts
 * (later entries win), with every configured filter and merge driver made inert when the call may apply
 * attributes.
 */
async function callSettings(
  args: readonly string[],
  options: GitCommandOptions,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<Record<string, string>> {
  const programs = mayApplyAttributes(args) ? await configuredProgramsFor(options, env, timeoutMs) : null;
  const settings: GitSetting[] = [
    ...Object.entries(options.config ?? {}),
    ...HOST_GIT_SETTINGS,
    ...(options.keepSymlinks ? [] : [LINKS_AS_FILES]),
    ...(programs ? inertPrograms(programs) : []),
  ];
  return settingsEnvironment(settings);
}

/** Runs git and returns its result; a non-zero exit is data, a git stopped at its time limit or killed is not. */
export async function tryGit(args: readonly string[], options: GitCommandOptions): Promise<GitCommandResult> {
  const timeoutMs = options.timeoutMs ?? HOST_GIT_TIMEOUT_MS;
  // Cut already: git is not started at all.
  if (options.signal?.aborted)
    throw stoppedError(args, options, timeoutMs, { timedOut: false, aborted: true, signal: null });
  const env = cleanGitEnvironment(options.env);
  const settings = await callSettings(args, options, env, timeoutMs);
  const result = await runBounded(withoutDiffPrograms(args), {
    cwd: options.cwd,
    env: { ...env, ...settings },
    input: options.input,
    timeoutMs,
    maxOutputBytes: options.maxOutputBytes,
    signal: options.signal,
  });
  if (result.stopped) throw stoppedError(args, options, timeoutMs, result.stopped);
  return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

/** Runs git where the runner expects success; a failure is a `workspace_failed` error naming the command. */
export async function git(args: readonly string[], options: GitCommandOptions): Promise<string> {
  const result = await tryGit(args, options);
  if (result.exitCode !== 0) {
    throw new AgentRunnerError(
      'workspace_failed',
      `git ${args.join(' ')} failed in ${options.cwd} (exit ${result.exitCode}): ${result.stderr.trim()}`,
      { details: { args, cwd: options.cwd, exitCode: result.exitCode, stderr: result.stderr } },
    );
  }
  return result.stdout;
}

/** Splits NUL-separated git output (`-z`), dropping the empty tail. */
export function splitNul(text: string): string[] {
  return text.split('\0').filter((part) => part.length > 0);
}
