/**
 * Preflight: before the first worker run, the program each check will start (the first word of its command)
 * is looked up in the sandbox, in the same clean shell the checks run in, so a toolchain missing from the image
 * ends the task at once with the fix, not after a whole worker run with a check that exits 127.
 *
 * Only what is certain is refused: a word that is a shell builtin or keyword passes (`command -v` knows them),
 * a path (`./scripts/check.sh`, `node_modules/.bin/x`) is not looked up (the worker may write it), nor is a
 * command that starts with shell syntax (`(`, `{`, `$VAR`, quotes). Leading `VAR=value` assignments and an
 * `env` with its options and assignments are read past.
 */
import type { MissingProgram, SandboxRuntime } from '../../core/ports.js';
import { cleanShellArgv } from './dod-checks.js';
import { SANDBOX_WORKDIR, sandboxGitEnvironment } from '../layout.js';
import { shellQuote } from './test-frameworks.js';

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=\S*$/;
const PROGRAM = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;

/** The program a command starts, or null when it is not certain (a path, shell syntax, quoting). */
export function firstProgram(command: string): string | null {
  const words = command.trim().split(/\s+/);
  let index = 0;
  while (index < words.length && ASSIGNMENT.test(words[index] as string)) index += 1;
  if (words[index] === 'env') {
    index += 1;
    while (index < words.length && (ASSIGNMENT.test(words[index] as string) || words[index]?.startsWith('-')))
      index += 1;
  }
  const word = words[index];
  return word !== undefined && PROGRAM.test(word) ? word : null;
}

/**
 * The commands whose program is not found in the sandbox, looked up in one exec (as the worker's uid, in the
 * repository, through the checks' clean shell). An exec that fails itself finds nothing missing: preflight
 * never stops a task on its own failure; the checks then say what they say.
 */
export async function missingPrograms(
  runtime: SandboxRuntime,
  sandboxId: string,
  commands: readonly { label: string; command: string }[],
  signal?: AbortSignal,
): Promise<MissingProgram[]> {
  const programs = [
    ...new Set(commands.map((item) => firstProgram(item.command)).filter((word) => word !== null)),
  ] as string[];
  if (programs.length === 0) return [];
  const script = programs
    .map(
      (program) =>
        `command -v -- ${shellQuote(program)} >/dev/null 2>&1 || printf '%s\\n' ${shellQuote(program)}`,
    )
    .join('\n');
  const result = await runtime.exec(sandboxId, cleanShellArgv(script), {
    workdir: SANDBOX_WORKDIR,
    env: sandboxGitEnvironment(),
    timeoutMs: 30_000,
    graceMs: 2_000,
    tailBytes: 16_384,
    signal,
  });
  if (result.exitCode !== 0 || result.timedOut) return [];
  const missing = new Set(result.stdoutTail.split('\n').filter((line) => programs.includes(line)));
  return commands.flatMap((item) => {
    const program = firstProgram(item.command);
    return program !== null && missing.has(program) ? [{ ...item, program }] : [];
  });
}
