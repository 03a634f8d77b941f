/**
 * The text of a worker CLI's instructions file (codex `$CODEX_HOME/AGENTS.md`, claude
 * `$CLAUDE_CONFIG_DIR/CLAUDE.md`, ...): the project's own file as committed at the task's base, then the memory
 * bank (src/memory/memory-view.ts). Written inside the sandbox, as the worker's uid, right before the CLI
 * starts, by a shell that then `exec`s the CLI; with it, when the CLI needs one, a settings file that makes the
 * CLI read this file and not the workspace's copy of the project's. Both live in the task's worker home, never in
 * the workspace, so they are no part of the repository, the diff or the checks, and the project's own file is
 * left as it is. They are written again before every run, so nothing a worker did to them reaches a later run.
 */
import path from 'node:path';
import { WORKER_KINDS, type WorkerType } from './worker-kinds.js';

/** The variable that carries the text into the sandbox (an argv would show it in `ps`; this is no secret). */
export const INSTRUCTIONS_VARIABLE = 'AGENT_RUNNER_INSTRUCTIONS';
/** The variable that carries the settings file's text, when there is one. */
export const SETTINGS_VARIABLE = 'AGENT_RUNNER_INSTRUCTIONS_SETTINGS';

/** Where the CLI of `type` reads its instructions file, given its state directory in the sandbox. */
export function instructionsFilePath(type: WorkerType, home: string): string {
  return path.posix.join(home, WORKER_KINDS[type].instructionsFile);
}

/** A settings file written beside the instructions file (its path in the sandbox and its whole text). */
export interface InstructionsSettings {
  file: string;
  text: string;
}

// `rm -f` first: a link the worker left in a file's place is removed, not written through. An empty text
// leaves no file.
const WRITE_THEN_EXEC =
  'file="$1"; settings="$2"; shift 2; ' +
  'put() { mkdir -p "${1%/*}" && rm -f "$1" && { [ -z "$2" ] || printf \'%s\\n\' "$2" > "$1"; }; }; ' +
  `put "$file" "$${INSTRUCTIONS_VARIABLE}" && ` +
  `{ [ -z "$settings" ] || put "$settings" "$${SETTINGS_VARIABLE}"; } && exec "$@"`;

/**
 * The CLI's argv and environment with the instructions file (and `settings`, if given) written first;
 * unchanged when `instructions` is undefined (no memory bank read for this task). An empty text removes the
 * file.
 */
export function withInstructionsFile(
  run: { argv: string[]; env: Record<string, string> },
  file: string,
  instructions: string | undefined,
  settings?: InstructionsSettings,
): { argv: string[]; env: Record<string, string> } {
  if (instructions === undefined) return run;
  return {
    argv: ['sh', '-c', WRITE_THEN_EXEC, 'sh', file, settings?.file ?? '', ...run.argv],
    env: {
      ...run.env,
      [INSTRUCTIONS_VARIABLE]: instructions,
      ...(settings ? { [SETTINGS_VARIABLE]: settings.text } : {}),
    },
  };
}
