/**
 * `agent-runner deliver <TASK-ID>`: push a finished task's branch from the host and, with `--pr`, open or update
 * its pull/merge request; also the delivery step `run --push/--pr` and `resume --push/--pr` take after the task.
 * A failed delivery leaves the task's state and note as they were and exits 6 (README: exit codes).
 */
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import type { TaskSummary } from '../core/types.js';
import type { DeliveryOutcome } from '../deliver/delivery-record.js';
import type { DeliverySettings } from '../deliver/deliver-task.js';
import { AgentRunnerError, EXIT_CODES, UserError } from '../errors.js';
import { inspectRepository } from '../workspace/git/inspect-repository.js';
import type { CommandContext } from './program.js';

/** The delivery flags `run`, `resume` and `deliver` share. */
export interface DeliveryFlags {
  push?: boolean;
  pr?: boolean;
  /** `deliver --draft`: deliver a task that is not COMPLETE as a draft (deliver.when: always). */
  draft?: boolean;
}

/** `deliver.*` with the flags laid over it; `pr` implies `push`. */
export function deliverySettings(configured: DeliverySettings, flags: DeliveryFlags): DeliverySettings {
  const pr = configured.pr || Boolean(flags.pr);
  return {
    ...configured,
    pr,
    push: configured.push || Boolean(flags.push) || pr,
    ...(flags.draft ? { when: 'always' as const } : {}),
  };
}

/**
 * The outcome's lines for a person (stdout), and the failure's message or why nothing was delivered on stderr
 * unless `failure: 'thrown'`: then the caller throws it and the error boundary prints it, once.
 */
export function reportDelivery(
  outcome: DeliveryOutcome,
  context: CommandContext,
  failure: 'printed' | 'thrown' = 'printed',
): void {
  if (outcome.skipped && failure === 'printed')
    context.output.err(`agent-runner: not delivered: ${outcome.skipped}`);
  if (outcome.pushed)
    context.output.out(`Pushed:   ${outcome.branch} (${outcome.sha?.slice(0, 12)}) to ${outcome.remote}`);
  if (outcome.url)
    context.output.out(`${outcome.changeRequest?.draft ? 'Draft:   ' : 'Request: '} ${outcome.url}`);
  if (outcome.error && failure === 'printed')
    context.output.err(`agent-runner: delivery failed: ${outcome.error.message}`);
}

/**
 * Runs the delivery step after a task (`run`/`resume` with `--push`/`--pr` or `deliver.*`): returns the outcome,
 * or null when none was asked. An error of delivery itself (a project, which has no task journal) is an outcome.
 */
export async function deliverAfterTask(
  summary: TaskSummary,
  input: { repoRoot: string; settings: DeliverySettings },
  context: CommandContext,
): Promise<DeliveryOutcome | null> {
  const { deliverTask, deliveryWanted } = await import('../deliver/deliver-task.js');
  if (!deliveryWanted(input.settings)) return null;
  try {
    return await deliverTask({
      repoRoot: input.repoRoot,
      taskId: summary.taskId,
      settings: input.settings,
      env: context.env,
      redaction: context.redaction,
    });
  } catch (error) {
    return {
      pushed: false,
      url: null,
      error: { kind: 'invalid', message: context.redaction.redact((error as Error).message) },
      skipped: null,
      branch: summary.branch,
      remote: null,
      sha: null,
      changeRequest: null,
    };
  }
}

/** The exit code a task ends with once delivered: 6 when a COMPLETE task's delivery failed, else its own. */
export function exitCodeAfterDelivery(summary: TaskSummary, outcome: DeliveryOutcome | null): number {
  return outcome?.error && summary.state === 'COMPLETE' ? EXIT_CODES.delivery : summary.exitCode;
}

export async function deliverCommand(
  taskId: string,
  options: DeliveryFlags & { json?: boolean; config?: string },
  context: CommandContext,
): Promise<DeliveryOutcome> {
  const repository = await inspectRepository(context.cwd);
  const config = await loadConfig({
    repoRoot: repository.root,
    env: context.env,
    ...(options.config ? { configFile: path.resolve(context.cwd, options.config) } : {}),
  });
  const { deliverTask } = await import('../deliver/deliver-task.js');
  // `deliver ID` always pushes: that is what it is for.
  const settings = deliverySettings({ ...config.deliver, push: true }, options);
  const outcome = await deliverTask({
    repoRoot: repository.root,
    taskId,
    settings,
    env: context.env,
    redaction: context.redaction,
  });
  if (options.json)
    context.output.out(JSON.stringify(context.redaction.value({ type: 'delivery', ...outcome })));
  else reportDelivery(outcome, context, 'thrown');
  // The error boundary prints the failure: it is said once, on stderr.
  if (outcome.error) {
    throw new AgentRunnerError('delivery_failed', `delivery failed: ${outcome.error.message}`, {
      exitCode: EXIT_CODES.delivery,
    });
  }
  if (outcome.skipped) throw new UserError('usage', `Task ${taskId} was not delivered: ${outcome.skipped}`);
  return outcome;
}

export function registerDeliverCommand(program: Command, context: CommandContext): void {
  program
    .command('deliver')
    .description(
      'Push a finished task branch from this machine and, with --pr, open or update its pull/merge request (the evidence as its body).',
    )
    .argument('<task-id>', 'the task to deliver (see `agent-runner status`)')
    .option('--pr', 'open or update the pull request (GitHub) or merge request (GitLab)')
    .option('--draft', 'deliver a task that is not COMPLETE, as a draft (deliver.when: always)')
    .option('--json', 'print the outcome as one JSON object')
    .option('--config <file>', 'configuration file (default: agent-runner.yaml in the repository root)')
    .action(async (taskId: string, options: DeliveryFlags & { json?: boolean; config?: string }) => {
      await deliverCommand(taskId, options, context);
    });
}
