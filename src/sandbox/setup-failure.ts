/**
 * What a failed `sandbox.setup` command is told as: the command's own error line (not the last line of
 * output, which is often npm's "A complete log of this run can be found in ...") and what to try, picked from
 * what the error says. The first line is one line, so it fits a status column; the output tail goes below.
 */
import type { ExecResult } from '../core/ports.js';

/** npm's metadata lines around the message (`code EACCES`, `syscall mkdir`, where the log is): not the cause. */
const NOISE =
  /^npm (ERR!|error)\s*(code|syscall|path|errno|dest|A complete log|Log files were not written|You can rerun|$)|complete log of this run/i;

/** Lines that carry the cause, most telling first. */
const ERROR_LINE_PATTERNS: readonly RegExp[] = [
  /^npm (ERR!|error) |\b(Error|ERROR|error|fatal|FATAL)\b[:!]|^E: |Traceback/,
  /command not found|: not found|No such file or directory/i,
  /\b(EACCES|EPERM|EROFS|ENOSPC|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|E403|E404|ERESOLVE)\b|failed|denied/i,
];

/** The line of `output` that best says what failed; empty when nothing stands out. */
export function setupErrorLine(output: string): string {
  const lines = output
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !NOISE.test(line));
  for (const pattern of ERROR_LINE_PATTERNS) {
    const line = lines.find((candidate) => pattern.test(candidate));
    if (line !== undefined) return line.slice(0, 300);
  }
  return (lines.at(-1) ?? '').slice(0, 300);
}

/** What to try, from the error line and the whole output. */
export function setupHint(output: string, result: Pick<ExecResult, 'timedOut' | 'oomKilled'>): string {
  if (result.timedOut) return 'Raise sandbox.setupTimeout, or make the command faster (a lockfile, a cache).';
  if (result.oomKilled) return 'The command ran out of memory: raise sandbox.memory.';
  if (/\b(EACCES|EPERM|EROFS)\b|permission denied|read-only file system/i.test(output)) {
    return (
      'The command wrote where the worker may not: only the workspace, $HOME and /tmp are writable in the ' +
      'sandbox. Point the tool at one of them (for example a cache under $HOME) with sandbox.env.'
    );
  }
  if (
    /not in sandbox\.allowlist|allows no connection|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|E403\b|403 Forbidden/i.test(
      output,
    )
  ) {
    return (
      'The network refused a host: add it to sandbox.allowlist (set-up uses the allowlist of your package ' +
      'registries), or set sandbox.setupNetwork: open.'
    );
  }
  if (/command not found|: not found/i.test(output)) {
    return (
      'A tool is missing from the worker image: add it with sandbox.dockerfile or sandbox.baseImage (see ' +
      '"Your project\'s toolchain" in the README).'
    );
  }
  return 'Run the same command in a fresh clone of your repository to reproduce it; the full output is in the run directory.';
}

/** One line: `` `npm ci` exited 1 under allowlist (...): npm ERR! code EACCES ``. */
export function describeSetupFailure(
  command: string,
  result: ExecResult,
  policy: string,
): { summary: string; hint: string; errorLine: string } {
  const output = `${result.stderrTail}\n${result.stdoutTail}`;
  const errorLine = setupErrorLine(result.stderrTail) || setupErrorLine(result.stdoutTail);
  const how = result.timedOut ? 'did not finish within sandbox.setupTimeout' : `exited ${result.exitCode}`;
  const summary = `sandbox.setup command \`${command}\` ${how} under network policy ${policy}${errorLine ? `: ${errorLine}` : ''}`;
  return { summary, hint: setupHint(output, result), errorLine };
}
