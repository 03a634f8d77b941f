/**
 * The memory bank's text in a worker CLI's own global instructions file (codex `$CODEX_HOME/AGENTS.md`, claude
 * `$CLAUDE_CONFIG_DIR/CLAUDE.md`, ...): written inside the sandbox, as the worker's uid, right before the CLI
 * starts, by a shell that then `exec`s the CLI. The file lives in the task's worker home, never in the
 * workspace, so it is no part of the repository, the diff or the checks, and the project's own file is left as
 * it is. It is written again before every run, so nothing a worker did to it reaches a later run.
 */
import path from 'node:path';
import { WORKER_KINDS, type WorkerType } from './worker-kinds.js';

/** The variable that carries the text into the sandbox (an argv would show it in `ps`; this is no secret). */
export const INSTRUCTIONS_VARIABLE = 'AGENT_RUNNER_INSTRUCTIONS';

/** Where the CLI of `type` reads its global instructions, given its state directory in the sandbox. */
export function instructionsFilePath(type: WorkerType, home: string): string {
  return path.posix.join(home, WORKER_KINDS[type].instructionsFile);
}

// `rm -f` first: a link the worker left in the file's place is removed, not written through.
const WRITE_THEN_EXEC =
  'file="$1"; shift; mkdir -p "${file%/*}" && rm -f "$file" && ' +
  `{ [ -z "$${INSTRUCTIONS_VARIABLE}" ] || printf '%s\\n' "$${INSTRUCTIONS_VARIABLE}" > "$file"; } && exec "$@"`;

/**
 * The CLI's argv and environment with the instructions file written first; unchanged when `instructions` is
 * undefined (no memory bank read for this task). An empty text removes the file.
 */
export function withInstructionsFile(
  run: { argv: string[]; env: Record<string, string> },
  file: string,
  instructions: string | undefined,
): { argv: string[]; env: Record<string, string> } {
  if (instructions === undefined) return run;
  return {
    argv: ['sh', '-c', WRITE_THEN_EXEC, 'sh', file, ...run.argv],
    env: { ...run.env, [INSTRUCTIONS_VARIABLE]: instructions },
  };
}
