/**
 * Run directories of tasks that never started: `agent-runner plan` writes its Meta-agent logs under
 * `.agent-runner/runs/<ID>/meta/` without starting a task, and a runner that died before its task started
 * leaves a lock and no `task_started`. `status` shows them as `never started` with the error when one was
 * recorded (`plan` records how it ended in {@link NOT_STARTED_FILE}), and `gc` removes them once nothing can
 * still be writing there.
 */
import { lstatSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';

/** What `plan` records of how it ended, in the run directory it wrote its logs to. */
export const NOT_STARTED_FILE = 'not-started.json';
/** A run directory untouched this long is no plan still being written (`gc --force` does not wait). */
export const NOT_STARTED_QUIET_MS = 15 * 60_000;

const notStartedSchema = z.object({
  command: z.string().max(40),
  /** The error it ended on, or null when it succeeded (a plan only). */
  error: z.string().max(4_000).nullable(),
  at: z.string().max(40),
});

export type NotStarted = z.infer<typeof notStartedSchema>;

/** Records how a command that starts no task ended (best effort: a log of it, not a fact anything needs). */
export function recordNotStarted(runDir: string, command: string, error: string | null): void {
  const entry: NotStarted = {
    command,
    error: error === null ? null : error.slice(0, 4_000),
    at: new Date().toISOString(),
  };
  try {
    writeFileSync(path.join(runDir, NOT_STARTED_FILE), `${JSON.stringify(entry)}\n`);
  } catch {
    // The directory may not exist (the plan failed before its first model call): nothing to say then.
  }
}

/** The recorded end of a command that started no task, or null (absent, unreadable, not ours). */
export function readNotStarted(runDir: string): NotStarted | null {
  const file = path.join(runDir, NOT_STARTED_FILE);
  try {
    // A small regular file only: anything else is not what `plan` wrote.
    const stat = lstatSync(file);
    if (!stat.isFile() || stat.size > 16 * 1024) return null;
    const parsed = notStartedSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Why a never-started task's directory is there, in words for the status column. */
export function notStartedReason(runDir: string, lockHeld: boolean): string {
  const recorded = readNotStarted(runDir);
  if (recorded?.error) return `never started: \`${recorded.command}\` failed: ${recorded.error}`;
  if (recorded) return `never started: only \`${recorded.command}\` ran`;
  if (lockHeld) return 'never started: the runner stopped before the task started';
  return 'never started: no task ran here (a `plan`, or a run that stopped before its task started)';
}

/** The newest modification time under `directory` (not following links), bounded to a few levels. */
function newestChange(directory: string, depth = 3): number {
  let newest = 0;
  try {
    newest = lstatSync(directory).mtimeMs;
    if (depth === 0) return newest;
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const child = path.join(directory, entry.name);
      newest = Math.max(
        newest,
        entry.isDirectory() ? newestChange(child, depth - 1) : lstatSync(child).mtimeMs,
      );
    }
  } catch {
    // Gone or unreadable meanwhile: what was seen counts.
  }
  return newest;
}

/**
 * Removes a never-started task's run directory when nothing touched it for {@link NOT_STARTED_QUIET_MS}
 * (`force`: at once). Returns what happened, in words, or null when it was left (still recent).
 */
export function removeNotStarted(
  runDir: string,
  options: { force: boolean; dryRun: boolean; now?: number },
): { removed: boolean; kept: string | null } {
  const age = (options.now ?? Date.now()) - newestChange(runDir);
  if (!options.force && age < NOT_STARTED_QUIET_MS)
    return {
      removed: false,
      kept: 'changed in the last 15 minutes (a `plan` may be running; --force removes it)',
    };
  if (!options.dryRun) rmSync(runDir, { recursive: true, force: true });
  return { removed: true, kept: null };
}
