/**
 * What a failed `sandbox.setup` command is told as: the command's own error line (not the last line of
 * output, which is often npm's "A complete log of this run can be found in ...") and what to try, from the
 * hint table the DoD and criteria checks share (src/core/failure-hints.ts). The output is read without its
 * colour sequences. The first line is one line, so it fits a status column; the output tail goes below.
 */
import { failureHint, firstErrorLine } from '../core/failure-hints.js';
import type { ExecResult } from '../core/ports.js';
import { stripTerminalSequences } from '../notes/terminal-text.js';

/** The line of `output` that best says what failed; empty when nothing stands out. */
export function setupErrorLine(output: string): string {
  return firstErrorLine(stripTerminalSequences(output));
}

/** What to try, from the error line and the whole output. */
export function setupHint(
  output: string,
  result: Pick<ExecResult, 'timedOut' | 'oomKilled' | 'exitCode'>,
): string {
  const failed = { output: stripTerminalSequences(output), ...result };
  // A set-up failure always gets a hint: the table's last resort for set-up is to reproduce it.
  return failureHint(failed, 'setup') ?? '';
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
