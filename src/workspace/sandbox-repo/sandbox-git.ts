/**
 * git inside the sandbox, run as the worker through the SandboxRuntime port. Facts about the working tree
 * (status, uncommitted diff) are gathered here, never by host git on the sandbox repository, because its
 * config is the worker's (core.fsmonitor, filters, external diff drivers would run on the host).
 * The flags below stop the same settings from bending the answers inside; the worker can still lie about
 * uncommitted state (they never leave the sandbox), while committed facts come from the host (facts.ts).
 */
import type { ExecResult, SandboxRuntime } from '../../core/ports.js';
import { SANDBOX_WORKDIR, sandboxGitEnvironment } from '../layout.js';

const HARDENING = [
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.untrackedCache=false',
  '-c',
  'core.quotePath=false',
  '-c',
  'diff.external=',
  '-c',
  'status.showUntrackedFiles=all',
];

/**
 * The limit of a git call that reads the whole tree (status, diff) in the sandbox. The worker owns every file
 * git reads there: a FIFO at `.git/config` or `.git/HEAD` blocks git until this limit or the task's signal.
 */
export const SANDBOX_GIT_TIMEOUT_MS = 120_000;
/** The limit of a git call that reads one ref (`rev-parse HEAD`): a blocked one says "unknown" soon. */
export const SANDBOX_GIT_LOOKUP_MS = 20_000;

/**
 * Runs `git <args>` in /workspace inside the sandbox with a large output tail (the answers are parsed). The
 * limit is required (the worker's files can block git for good); `signal` is Ctrl-C, SIGTERM, the wall clock.
 */
export function sandboxGit(
  runtime: SandboxRuntime,
  sandboxId: string,
  args: readonly string[],
  options: { timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<ExecResult> {
  return runtime.exec(sandboxId, ['git', ...HARDENING, '-C', SANDBOX_WORKDIR, ...args], {
    workdir: SANDBOX_WORKDIR,
    env: { ...sandboxGitEnvironment(), GIT_NO_REPLACE_OBJECTS: '1', GIT_OPTIONAL_LOCKS: '0', LC_ALL: 'C' },
    timeoutMs: options.timeoutMs,
    tailBytes: 4 * 1024 * 1024,
    // Ctrl-C, SIGTERM, the wall clock: the facts' git calls in the sandbox stop with the task.
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

export interface UncommittedChange {
  path: string;
  /** Two-letter porcelain status (`??` untracked, ` M` modified, `D ` deleted and staged, ...). */
  status: string;
}

/** Uncommitted changes of the sandbox working tree (tracked and untracked, ignored files left out). */
export async function sandboxStatus(
  runtime: SandboxRuntime,
  sandboxId: string,
  // Required: a caller must say which stop ends it (undefined only where nothing can stop the step).
  signal: AbortSignal | undefined,
): Promise<{ changes: UncommittedChange[]; error: string | null }> {
  const result = await sandboxGit(
    runtime,
    sandboxId,
    ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames'],
    { timeoutMs: SANDBOX_GIT_TIMEOUT_MS, signal },
  );
  if (result.exitCode !== 0) {
    return {
      changes: [],
      error: `git status in the sandbox failed (exit ${result.exitCode}): ${result.stderrTail.trim()}`,
    };
  }
  const changes = result.stdoutTail
    .split('\0')
    .filter((entry) => entry.length > 3)
    .map((entry) => ({ status: entry.slice(0, 2), path: entry.slice(3) }));
  return { changes, error: null };
}

/** How `git status --porcelain` marks an ignored path. */
const IGNORED_STATUS = '!! ';

/**
 * Ignored files under `pathspec` in the sandbox working tree, one by one: what {@link sandboxStatus} leaves out
 * when the repository's `.gitignore` covers a path the worker may still not write (`.agent-runner/`).
 */
export async function sandboxIgnoredFiles(
  runtime: SandboxRuntime,
  sandboxId: string,
  pathspec: string,
  signal: AbortSignal | undefined,
): Promise<{ paths: string[]; error: string | null }> {
  const result = await sandboxGit(
    runtime,
    sandboxId,
    [
      'status',
      '--porcelain=v1',
      '-z',
      '--untracked-files=all',
      '--ignored=traditional',
      '--no-renames',
      '--',
      pathspec,
    ],
    { timeoutMs: SANDBOX_GIT_TIMEOUT_MS, signal },
  );
  if (result.exitCode !== 0) {
    return {
      paths: [],
      error: `git status --ignored in the sandbox failed (exit ${result.exitCode}): ${result.stderrTail.trim()}`,
    };
  }
  const paths = result.stdoutTail
    .split('\0')
    .filter((entry) => entry.startsWith(IGNORED_STATUS))
    .map((entry) => entry.slice(IGNORED_STATUS.length));
  return { paths, error: null };
}
