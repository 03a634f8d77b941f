/**
 * `agent-runner doctor`: checks that everything a run needs is in place and prints a table (or JSON).
 * Exit 0 when every check passes, else 4 (environment); the table is printed either way.
 */
import type { Command } from 'commander';
import type { DoctorCheck } from '../doctor/doctor-check.js';
import { EXIT_CODES } from '../errors.js';
import type { CommandContext } from './program.js';

/** Registers `doctor` on the program. */
export function registerDoctorCommand(program: Command, context: CommandContext): void {
  program
    .command('doctor')
    .description('Check Docker, the worker image, the git repository and the model endpoints')
    .option('--json', 'print the checks as JSON')
    .action(async (options: { json?: boolean }) => {
      const { allPassed, runDoctorChecks } = await import('../doctor/run-doctor.js');
      const checks = await runDoctorChecks({ cwd: context.cwd, env: context.env });
      const ok = allPassed(checks);
      if (options.json) context.output.out(JSON.stringify({ ok, checks }, null, 2));
      else context.output.out(formatDoctorTable(checks));
      if (!ok) context.setExitCode(EXIT_CODES.environment);
    });
}

/** A plain-text table: CHECK, STATUS, DETAIL, with a `fix:` line under each failed check. */
export function formatDoctorTable(checks: readonly DoctorCheck[]): string {
  const nameWidth = Math.max('CHECK'.length, ...checks.map((check) => check.name.length));
  const statusWidth = 'STATUS'.length;
  const row = (name: string, status: string, detail: string) =>
    `${name.padEnd(nameWidth)}  ${status.padEnd(statusWidth)}  ${detail}`;
  const lines = [row('CHECK', 'STATUS', 'DETAIL')];
  for (const check of checks) {
    // Multi-line details (config issues) stay readable when indented under the detail column.
    const [first = '', ...rest] = check.detail.split('\n');
    lines.push(row(check.name, check.ok ? 'ok' : 'FAIL', first));
    const indent = ' '.repeat(nameWidth + statusWidth + 4);
    for (const line of rest) lines.push(`${indent}${line}`);
    if (!check.ok && check.fix) lines.push(`${indent}fix: ${check.fix}`);
  }
  const failedCount = checks.filter((check) => !check.ok).length;
  lines.push('', failedCount ? `${failedCount} check(s) failed.` : 'All checks passed.');
  return lines.join('\n');
}
