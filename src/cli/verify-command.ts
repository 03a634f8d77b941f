/**
 * `agent-runner verify <branch|ID>`: the recorded DoD and criteria checks of a task run again on the branch's
 * head in a fresh sandbox, compared with the evidence on the branch. One line per check (`holds`, `differs`,
 * `not run`) and a summary; `--json` gives the same as one object. Exit 0 only when every recorded check
 * holds; 1 (`verify_failed`) when any differs or could not run again; 2 when there is no evidence; 4 without
 * Docker.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { AgentRunnerError, EXIT_CODES } from '../errors.js';
import { loadConfig } from '../config/load.js';
import { inspectRepository } from '../workspace/git/inspect-repository.js';
import type { CheckVerdict } from '../verify/compare-evidence.js';
import type { VerifyResult } from '../verify/run-verify.js';
import type { CommandContext } from './program.js';

/** Lines of a differing check's output shown under it. */
const TAIL_LINES = 12;

const LABEL: Record<CheckVerdict['verdict'], string> = {
  holds: 'holds  ',
  differs: 'differs',
  not_run: 'not run',
};

const short = (sha: string) => sha.slice(0, 12);

function result(side: CheckVerdict['recorded']): string {
  if (!side) return '-';
  return side.exitCode === null ? side.status : `${side.status} (exit ${side.exitCode})`;
}

/** One line per check (a differing one with its output's tail), then the summary. */
export function formatVerifyResult(verified: VerifyResult): string[] {
  const { evidence, report } = verified;
  const lines = [
    `verify ${verified.branch} at ${short(verified.headSha)}: evidence of task ${evidence.taskId} (${evidence.state}) recorded on ${short(verified.evidenceHead)}`,
  ];
  for (const verdict of report.verdicts) {
    const head = `${LABEL[verdict.verdict]}  ${verdict.check} \`${verdict.target}\``;
    if (verdict.verdict === 'holds') lines.push(`${head}: ${result(verdict.recorded)} as recorded`);
    else if (verdict.verdict === 'differs') {
      lines.push(`${head}: ${verdict.why}`);
      const failing = verdict.now?.failingTests ?? [];
      if (failing.length > 0) lines.push(`           failing now: ${failing.slice(0, 10).join('; ')}`);
      const tail = (verdict.now?.outputTail ?? '').trimEnd().split('\n').slice(-TAIL_LINES);
      for (const line of tail) if (line.trim()) lines.push(`           | ${line}`);
    } else lines.push(`${head}: ${verdict.why}`);
  }
  lines.push(summaryLine(verified));
  return lines;
}

function summaryLine(verified: VerifyResult): string {
  const { report } = verified;
  const counts = `${report.holds} hold, ${report.differs} differ, ${report.notRun} not run`;
  const moved = verified.moved ? ` (the branch moved since ${short(verified.evidenceHead)})` : '';
  if (report.allHold) return `${counts}: the evidence holds on ${short(verified.headSha)}${moved}`;
  if (report.verdicts.every((verdict) => !verdict.counts))
    return `${counts}: no check with a recorded result to run again: nothing is verified`;
  return `${counts}: the evidence does not hold on ${short(verified.headSha)}${moved}`;
}

/** The `--json` object. */
export function verifyObject(verified: VerifyResult): Record<string, unknown> {
  return {
    type: 'verify',
    branch: verified.branch,
    headSha: verified.headSha,
    evidenceHead: verified.evidenceHead,
    moved: verified.moved,
    taskId: verified.evidence.taskId,
    state: verified.evidence.state,
    image: verified.image,
    recordedImage: verified.evidence.image,
    verdicts: verified.report.verdicts,
    holds: verified.report.holds,
    differs: verified.report.differs,
    notRun: verified.report.notRun,
    allHold: verified.report.allHold,
    durationMs: verified.durationMs,
    exitCode: verified.report.allHold ? EXIT_CODES.complete : EXIT_CODES.failed,
    notices: verified.notices,
  };
}

export function registerVerifyCommand(program: Command, context: CommandContext): void {
  program
    .command('verify')
    .description(
      "Run a task's recorded DoD and criteria checks again on its branch's head in a fresh sandbox and say which hold",
    )
    .argument(
      '<target>',
      'a task ID, a local branch, a remote branch (origin/agent-runner/<ID>), or a pull/merge request URL',
    )
    .option('--json', 'print the result as one JSON object')
    .option('--config <file>', 'config file (default: agent-runner.yaml in the repository)')
    .action(async (target: string, options: { json?: boolean; config?: string }) => {
      // Imported here: no other command's start needs the evidence's modules.
      const [{ refuseOtherUrl }, { TaskHost }] = await Promise.all([
        import('../verify/verify-target.js'),
        import('../compose/task-host.js'),
      ]);
      // Before anything is read: a URL that is no pull/merge request page.
      refuseOtherUrl(target);
      const repository = await inspectRepository(context.cwd);
      const config = await loadConfig({
        repoRoot: repository.root,
        env: context.env,
        ...(options.config ? { configFile: path.resolve(context.cwd, options.config) } : {}),
      });
      const host = new TaskHost(context.env, {}, context.redaction);
      host.protect(config, context.env);
      const controller = new AbortController();
      const stop = () => controller.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      let verified: VerifyResult;
      try {
        const { runVerify } = await import('../verify/run-verify.js');
        verified = await runVerify({
          repoRoot: repository.root,
          argument: target,
          config,
          env: context.env,
          redaction: host.redaction,
          docker: () => host.docker(),
          onNotice: options.json ? undefined : (line) => context.output.err(`agent-runner: ${line}`),
          signal: controller.signal,
        });
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
      // Checks cut short by Ctrl-C say nothing about the branch: no verdict is printed.
      if (controller.signal.aborted)
        throw new AgentRunnerError('interrupted', 'verify was interrupted; nothing of it is kept.', {
          exitCode: EXIT_CODES.interrupted,
        });
      if (options.json) context.output.out(JSON.stringify(verifyObject(verified)));
      else for (const line of formatVerifyResult(verified)) context.output.out(line);
      if (!verified.report.allHold)
        throw new AgentRunnerError(
          'verify_failed',
          `the evidence of task ${verified.evidence.taskId} does not hold on ${verified.branch} (${short(verified.headSha)}): ${verified.report.differs} check(s) differ, ${verified.report.notRun} not run.`,
          { exitCode: EXIT_CODES.failed },
        );
    });
}
