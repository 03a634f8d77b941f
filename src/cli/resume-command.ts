/**
 * `agent-runner resume <TASK-ID>`: continues a task after an interrupt, a failure or a crash of the runner. The
 * task is rebuilt from its event journal (plan, runs, Meta-agent calls, the worker thread) and run on from
 * there with a new sandbox; the worker's commits on the task branch and its uncommitted files in the sandbox
 * repository are where the earlier attempt left them.
 */
import path from 'node:path';
import type { Command } from 'commander';
import type { TaskSummary } from '../core/types.js';
import type { CommandContext } from './program.js';
import { driveTask, type RunCommandOptions } from './run-command.js';
import { flagsLayer, RUNTIME_FLAG, RUNTIME_FLAG_HELP } from './run-flags.js';

/** The flags `resume` shares with `run` (one type: a flag added to both is declared once). */
export type ResumeCommandOptions = Pick<
  RunCommandOptions,
  | 'model'
  | 'maxIterations'
  | 'timeout'
  | 'skipDod'
  | 'json'
  | 'headless'
  | 'keepSandbox'
  | 'config'
  | 'repo'
  | 'push'
  | 'pr'
>;

export async function resumeCommand(
  taskId: string,
  options: ResumeCommandOptions,
  context: CommandContext,
): Promise<TaskSummary> {
  // Imported here: reading a journal back is no other command's start.
  const [{ resumeTaskSpec }, { taskRepository }] = await Promise.all([
    import('../compose/resume-task-spec.js'),
    import('./command-repositories.js'),
  ]);
  // A `--repo` task resumes in its cache as it is: its branch is there, nothing needs fetching.
  const repository = await taskRepository(taskId, options.repo, context);
  const { spec, projectOptions } = await resumeTaskSpec({
    repoRoot: repository.root,
    taskId,
    cwd: context.cwd,
    env: context.env,
    overrides: flagsLayer(options),
    ...(options.config ? { configFile: path.resolve(context.cwd, options.config) } : {}),
    newTimeout: options.timeout !== undefined,
    ...(options.keepSandbox !== undefined ? { keepSandbox: options.keepSandbox } : {}),
    ...(options.skipDod !== undefined ? { skipDod: options.skipDod } : {}),
  });
  const remote = repository.url === null ? {} : { remote: { url: repository.url, root: repository.root } };
  return driveTask(spec, projectOptions, { ...options, ...remote }, context);
}

export function registerResumeCommand(program: Command, context: CommandContext): void {
  program
    .command('resume')
    .description(
      'Continue a task after an interrupt, a failure or a crash, from its journal (.agent-runner/runs/<TASK-ID>/events.jsonl).',
    )
    .argument('<task-id>', 'the task to continue (see `agent-runner status`)')
    .option(
      '--repo <url>',
      'the task of a `run --repo` (default: found in the cache when outside any repository)',
    )
    .option('--model <name>', 'model for the Meta-agent (and the worker, unless worker.model is set)')
    .option('--max-iterations <n>', 'most worker runs, counting the earlier attempts')
    .option(
      '--timeout <duration>',
      'wall clock for this attempt, e.g. 45m (default: what is left of the task limit)',
    )
    .option('--skip-dod', 'do not run the Definition-of-Done checks (recorded as skipped)')
    .option('--json', 'JSONL events on stdout, ending with a summary object')
    .option('--headless', 'never prompt (automatic when stdin is not a TTY or CI is set)')
    .option('--keep-sandbox', 'keep the container after the task, for debugging')
    .option(RUNTIME_FLAG, RUNTIME_FLAG_HELP)
    .option('--push', 'push agent-runner/<ID> to deliver.remote (origin) from this machine after the task')
    .option('--pr', 'push, then open or update the pull/merge request whose body is the evidence')
    .option('--config <file>', 'configuration file (default: agent-runner.yaml in the repository root)')
    .action(async (taskId: string, options: ResumeCommandOptions) => {
      await resumeCommand(taskId, options, context);
    });
}
