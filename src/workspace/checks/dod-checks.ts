/**
 * Definition-of-done checks: commands from config or detection (never from model text), run in the sandbox
 * in order after every worker run. Each one is recorded; a failing check does not stop the next one, so the
 * evidence is complete.
 */
import type { SandboxRuntime } from '../../core/ports.js';
import type { DodCheckResult, DodCheckStatus } from '../../core/types.js';
import type { DodCheck } from '../../config/schema.js';
import { parseFailingTests, parseTestCounts, readCheckOutput } from './test-counts.js';
import { BASH_WITHOUT_STARTUP_FILES } from '../../sandbox/no-startup-files.js';
import { tailOf } from '../../sandbox/output-tail.js';
import { endStrayProcesses, sweepRefusal } from '../../sandbox/stray-processes.js';
import { RESTORE_BUILD_SCRIPT, SEALED_CACHE_DIR, WARM_BUILD_SCRIPT, WARM_CACHE_DIR } from './check-caches.js';
import { PYTHON_VENV_DIR } from './detect-setup.js';
import { SANDBOX_WORKDIR, sandboxGitEnvironment } from '../layout.js';
import { putBackTrackedChanges, rewroteNotice } from './check-rewrites.js';
import { sandboxStatus } from '../sandbox-repo/sandbox-git.js';

/**
 * How a check runs: no startup file the worker can write is read. Not a login shell (`-l` would read
 * ~/.bash_profile and ~/.profile from the worker's home), no ~/.bashrc, no BASH_ENV or ENV (removed by `env`
 * before bash starts, since bash reads BASH_ENV before its script), and a fresh empty HOME made with
 * `mktemp -d` for each check, so ~/.npmrc, ~/.gitconfig and the like that the worker planted are not seen.
 * The command is the script's `$3` (the last argument), never spliced into shell text; `$1` says how the
 * checks' caches are used (src/workspace/checks/check-caches.ts), `$2` is the directory.
 */
const CLEAN_SHELL_SCRIPT = [
  // The homes of earlier checks go first (one check at a time runs; each leaves its home, caches included, for the
  // next one to remove: a trap here would keep bash waiting and add its job messages to the check's output).
  'rm -rf /tmp/agent-runner-home.* 2>/dev/null',
  'home=$(mktemp -d /tmp/agent-runner-home.XXXXXXXXXX) || exit 125',
  "sealed=''",
  'export HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_CACHE_HOME="$home/.cache"',
  // The checks' caches (src/workspace/checks/check-caches.ts): filled by a trusted run, or copied from the sealed ones.
  `case "$1" in`,
  // TMPDIR in the cache too: jest keeps its cache in os.tmpdir() (a shared /tmp would be the worker's to plant).
  `  warm) mkdir -p ${WARM_CACHE_DIR}/tmp && export XDG_CACHE_HOME=${WARM_CACHE_DIR} TMPDIR=${WARM_CACHE_DIR}/tmp ;;`,
  `  use) if [ -d ${SEALED_CACHE_DIR} ] && [ ! -O ${SEALED_CACHE_DIR} ] && [ ! -w ${SEALED_CACHE_DIR} ]; then`,
  `    sealed=${SEALED_CACHE_DIR}`,
  `    if [ -d ${SEALED_CACHE_DIR}/xdg ]; then cp -R ${SEALED_CACHE_DIR}/xdg/. "$home/.cache/" 2>/dev/null; chmod -R u+w "$home/.cache" 2>/dev/null; fi`,
  `    if [ -d ${SEALED_CACHE_DIR}/gomod ]; then export GOMODCACHE=${SEALED_CACHE_DIR}/gomod; fi`,
  '  fi',
  '  mkdir -p "$home/.cache/tmp" && export TMPDIR="$home/.cache/tmp" ;;',
  'esac',
  'cd "$2" || exit 125',
  // The Python venv of the detected set-up (detect-setup.ts) comes first on PATH: `python3 -m pytest` is its own.
  // The check runs the worker's code anyway, so a worker-made .venv gives it nothing new.
  `if [ -x ${PYTHON_VENV_DIR}/bin/python ]; then export VIRTUAL_ENV="$PWD/${PYTHON_VENV_DIR}" PATH="$PWD/${PYTHON_VENV_DIR}/bin:$PATH"; fi`,
  // The base's build state (src/workspace/checks/check-caches.ts): listed before the baseline, restored after it.
  `case "$1" in`,
  '  warm)',
  WARM_BUILD_SCRIPT,
  '  ;;',
  '  use) if [ -n "$sealed" ]; then',
  RESTORE_BUILD_SCRIPT,
  '  fi ;;',
  'esac',
  'eval "$3"',
].join('\n');

/** How a check uses the checks' caches: fills the warm one (a trusted run), or copies the sealed one. */
export type CheckCacheMode = 'warm' | 'use';

/** The argv that runs `command` in `workdir` with no worker-writable startup file and a fresh HOME. */
export function cleanShellArgv(
  command: string,
  workdir = SANDBOX_WORKDIR,
  cache: CheckCacheMode | 'none' = 'none',
): string[] {
  return [...BASH_WITHOUT_STARTUP_FILES, CLEAN_SHELL_SCRIPT, 'agent-runner-dod', cache, workdir, command];
}

export type DodStatus = DodCheckStatus;

/** The core's DoD check result (one type for the concept) plus what only the workspace needs. */
export interface DodResult extends DodCheckResult {
  timeoutMs: number;
  /** The sandbox had uncommitted changes when the checks ran: not evidence that the committed work is done. */
  ranOnDirtyTree: boolean;
  /** Stopped by the caller's AbortSignal (recorded as failed). */
  interrupted: boolean;
}

export interface RunDodChecksOptions {
  /** How the checks use the caches (src/workspace/checks/check-caches.ts); default: not at all. */
  cache?: CheckCacheMode;
  /** `dod.skip`: every check is recorded as `skipped` and nothing runs. */
  skip?: boolean;
  signal?: AbortSignal;
  /** Grace between SIGTERM and SIGKILL on timeout (default 5 s). */
  graceMs?: number;
  /** Characters of output kept per check (default 4000). */
  tailChars?: number;
  onOutputLine?: (check: string, line: string) => void;
}

/**
 * Where the checks run, decided from measurements (docs/threat-model.md has the figures): in the task's own
 * sandbox, after every process of the worker run has been ended, through cleanShellArgv, and recorded as
 * `ranOnDirtyTree` when anything is uncommitted. A fresh short-lived container from the same image over a
 * clean checkout of the head commit was measured on a 2-core machine: +0.45 s for the container (0.66 s vs
 * 0.20 s for an exec), +1.0 s when a 44 MB node_modules is copied in, and 35-43 s when it is installed from
 * the registry instead. Only the install would make the checks independent of what the worker left in ignored
 * paths (node_modules, build outputs), because a copied node_modules is the worker's own; paying a clean
 * install after every worker run (and giving the DoD the network) was judged too dear. The residual risk —
 * a worker that tampers with ignored files the checks use — is stated in docs/threat-model.md.
 *
 * Runs the checks in /workspace as the worker, each through cleanShellArgv. Before each one every process of
 * the worker's uid is ended (whatever the worker run or an earlier check left: a test runner's daemon, a
 * watcher, a tamperer waiting for the tests to start), so nothing but the check itself runs beside it; a check
 * whose sweep was not clean is not run and counts as failed. A last sweep follows the last check.
 */
export async function runDodChecks(
  runtime: SandboxRuntime,
  sandboxId: string,
  checks: readonly DodCheck[],
  options: RunDodChecksOptions = {},
): Promise<DodResult[]> {
  if (options.skip) {
    return checks.map((check) => ({
      name: check.name,
      command: check.command,
      status: 'skipped',
      exitCode: null,
      durationMs: 0,
      timeoutMs: check.timeout,
      outputTail: '',
      ranOnDirtyTree: false,
      interrupted: false,
    }));
  }
  if (checks.length === 0) return [];
  const graceMs = options.graceMs ?? 5_000;
  // The status too is read with nothing of the worker's alive.
  let sweep = await endStrayProcesses(runtime, sandboxId, graceMs);
  const status = await sandboxStatus(runtime, sandboxId, options.signal);
  // An unreadable status counts as dirty: the run cannot be shown to test committed work.
  const ranOnDirtyTree = status.error !== null || status.changes.length > 0;
  const tailChars = options.tailChars ?? 4000;
  const results: DodResult[] = [];
  for (const check of checks) {
    const refusal = sweepRefusal(sweep);
    if (refusal !== null) {
      results.push(notRun(check, refusal, ranOnDirtyTree));
      sweep = await endStrayProcesses(runtime, sandboxId, graceMs);
      continue;
    }
    const result = await runtime.exec(
      sandboxId,
      cleanShellArgv(check.command, SANDBOX_WORKDIR, options.cache),
      {
        workdir: SANDBOX_WORKDIR,
        env: sandboxGitEnvironment(),
        timeoutMs: check.timeout,
        graceMs,
        tailBytes: Math.max(8192, tailChars * 2),
        signal: options.signal,
        onStdoutLine: options.onOutputLine ? (line) => options.onOutputLine?.(check.name, line) : undefined,
        onStderrLine: options.onOutputLine ? (line) => options.onOutputLine?.(check.name, line) : undefined,
      },
    );
    // After this check and before the next: whatever this one started is ended.
    sweep = await endStrayProcesses(runtime, sandboxId, graceMs);
    // Checks are checks: tracked files a check changed are put back, and the check did not check the commit.
    const rewrote = ranOnDirtyTree ? null : await putBackTrackedChanges(runtime, sandboxId, options.signal);
    // Evidence for the person, passing or failing; the gate decides on the exit code alone. Read once.
    const output = readCheckOutput(result);
    const tests = parseTestCounts(output);
    const failingTests = result.exitCode === 0 ? null : parseFailingTests(output);
    const outputTail = tailOf(result.stdoutTail, result.stderrTail, tailChars);
    results.push({
      name: check.name,
      command: check.command,
      status: result.timedOut
        ? 'timeout'
        : result.exitCode === 0 && !result.interrupted && !rewrote?.count
          ? 'passed'
          : 'failed',
      exitCode: result.timedOut ? null : result.exitCode,
      durationMs: result.durationMs,
      timeoutMs: check.timeout,
      outputTail: rewrote?.count ? `${rewroteNotice(rewrote)}\n${outputTail}` : outputTail,
      ...(rewrote?.count ? { rewrote } : {}),
      ...(tests ? { tests } : {}),
      ...(failingTests ? { failingTests } : {}),
      ranOnDirtyTree,
      interrupted: result.interrupted,
    });
    if (result.interrupted) break;
  }
  return results;
}

/** A check that was not run because the sweep before it was not clean: failed, with the reason as its output. */
function notRun(check: DodCheck, reason: string, ranOnDirtyTree: boolean): DodResult {
  return {
    name: check.name,
    command: check.command,
    status: 'failed',
    exitCode: null,
    durationMs: 0,
    timeoutMs: check.timeout,
    outputTail: reason,
    ranOnDirtyTree,
    interrupted: false,
  };
}

/** True when the results are evidence of done: at least one check, all passed, none on a dirty tree. */
export function dodIsEvidenceOfDone(results: readonly DodResult[]): boolean {
  return (
    results.length > 0 && results.every((result) => result.status === 'passed' && !result.ranOnDirtyTree)
  );
}
