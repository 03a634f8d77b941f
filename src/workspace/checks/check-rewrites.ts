/**
 * Checks are checks: a DoD check that changes tracked files (a `lint` script with `--write`, a formatter, a
 * test that rewrites a fixture) has checked something other than the committed tree. After each check on a
 * tree that was clean when the checks began, the tracked files that differ from HEAD are read and put back
 * (inside the sandbox, with the worker's own git, as every working-tree fact is), and the check is reported
 * with them. Untracked files a check leaves (build outputs, caches) are not touched.
 */
import type { SandboxRuntime } from '../../core/ports.js';
import { SANDBOX_GIT_TIMEOUT_MS, sandboxGit } from '../sandbox-repo/sandbox-git.js';

/** At most this many of the changed paths are named in the result. */
export const MAX_REWRITTEN_PATHS = 20;

/**
 * The tracked paths that differ from HEAD now (at most {@link MAX_REWRITTEN_PATHS} named, all counted), after
 * putting them back to HEAD. Call it only when the tree was clean before the checks: anything found was made
 * by a check. An unreadable answer is taken as no change (the check's own result still stands).
 */
export async function putBackTrackedChanges(
  runtime: SandboxRuntime,
  sandboxId: string,
  signal?: AbortSignal,
): Promise<{ paths: string[]; count: number }> {
  const diff = await sandboxGit(
    runtime,
    sandboxId,
    ['diff', '--name-only', '-z', '--no-renames', 'HEAD', '--'],
    { timeoutMs: SANDBOX_GIT_TIMEOUT_MS, signal },
  );
  const changed = diff.exitCode === 0 ? diff.stdoutTail.split('\0').filter(Boolean) : [];
  if (changed.length === 0) return { paths: [], count: 0 };
  await sandboxGit(runtime, sandboxId, ['reset', '-q', '--hard', 'HEAD'], {
    timeoutMs: SANDBOX_GIT_TIMEOUT_MS,
    signal,
  });
  return { paths: changed.slice(0, MAX_REWRITTEN_PATHS), count: changed.length };
}

/** The words that open the output of a check that rewrote tracked files. */
export function rewroteNotice(rewrote: { paths: string[]; count: number }): string {
  const more =
    rewrote.count > rewrote.paths.length ? ` and ${rewrote.count - rewrote.paths.length} more` : '';
  return (
    `The check changed ${rewrote.count} tracked file(s), so it did not check the committed tree: ` +
    `${rewrote.paths.join(', ')}${more}. They were put back to the commit; commit what the check writes ` +
    '(run it, then commit), or give a check that only reads (e.g. `--check` instead of `--write`).'
  );
}
