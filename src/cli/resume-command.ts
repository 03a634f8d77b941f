/**
 * `agent-runner resume <TASK-ID>`: continues a task after an interrupt, a failure or a crash of the runner. The
 * task is rebuilt from its event journal (plan, runs, Meta-agent calls, the worker thread) and run on from
 * there with a new sandbox; the worker's commits on the task branch and its uncommitted files in the sandbox
 * repository are where the earlier attempt left them.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import type { TaskSummary } from '../core/types.js';
import { UserError } from '../errors.js';
import {
  assertResumable,
  journalPath,
  previousAttempt,
  readTaskJournal,
} from '../lifecycle/task-journal-state.js';
import { loadPrd } from '../prd/load-prd.js';
import { inspectRepository } from '../workspace/inspect-repository.js';
import { taskLayout } from '../workspace/layout.js';
import { readProjectJournal, type ProjectResume } from '../parallel/project-journal.js';
import type { CommandContext } from './program.js';
import { driveTask, flagsLayer } from './run-command.js';

export interface ResumeCommandOptions {
  model?: string;
  maxIterations?: string;
  timeout?: string;
  skipDod?: boolean;
  json?: boolean;
  headless?: boolean;
  keepSandbox?: boolean;
  config?: string;
}

export async function resumeCommand(
  taskId: string,
  options: ResumeCommandOptions,
  context: CommandContext,
): Promise<TaskSummary> {
  const repository = await inspectRepository(context.cwd);
  const layout = taskLayout(repository.root, taskId);
  const project = readProjectJournal(layout.runDir);
  if (project) return resumeProject(taskId, project, options, context, repository.root);
  const journal = readTaskJournal(layout.runDir, taskId);
  if (journal === null || journal.attempts === 0) {
    throw new UserError(
      'task_not_found',
      `Task ${taskId} has no journal in ${layout.runDir}, so there is nothing to resume. ` +
        'See `agent-runner status` for the tasks of this repository, or start it with `agent-runner run --prd FILE`.',
    );
  }
  if (journal.finished?.state === 'COMPLETE') {
    throw new UserError(
      'usage',
      `Task ${taskId} is already COMPLETE (see ${journal.finished.notePath ?? `.agent-runner/task-${taskId}.md`}). ` +
        'Start a new task for further work: `agent-runner run --prd FILE`.',
    );
  }
  assertResumable(journal, journalPath(layout.runDir));
  const started = journal.options;
  let prd = started?.prd;
  let prdPath = started?.prdPath ?? '';
  if (!prd) {
    // Journals of older versions did not record the PRD: read it again from where it was.
    if (!prdPath)
      throw new UserError(
        'task_not_found',
        `The journal of task ${taskId} does not say which PRD it ran; start it again with \`agent-runner run --prd FILE --task-id ${taskId}\`.`,
      );
    prdPath = path.resolve(context.cwd, prdPath);
    prd = await loadPrd(prdPath);
  }
  const config = await loadConfig({
    repoRoot: repository.root,
    env: context.env,
    flags: flagsLayer(options),
    ...(options.config ? { configFile: path.resolve(context.cwd, options.config) } : {}),
  });
  const previous = previousAttempt(journal);
  // An explicit --timeout is this attempt's budget; otherwise the task's wall clock covers every attempt.
  if (previous && options.timeout !== undefined) previous.elapsedMs = 0;
  return driveTask(
    {
      repoRoot: repository.root,
      prd,
      prdPath,
      taskId,
      ...(started?.base !== undefined ? { base: started.base } : {}),
      config,
      env: context.env,
      // What the task was started with holds for every attempt: a kept sandbox, a recording.
      keepSandbox: Boolean(options.keepSandbox ?? started?.keepSandbox),
      dodSkipped: Boolean(options.skipDod ?? started?.dodSkipped),
      ...(started?.record || started?.replay
        ? {
            models: {
              ...(started.record ? { record: started.record } : {}),
              ...(started.replay ? { replay: started.replay } : {}),
            },
          }
        : {}),
      // No plan yet (it died while planning): the task simply starts over from the PRD.
      start: previous ? { kind: 'resume', previous, attempt: journal.attempts + 1 } : { kind: 'new' },
    },
    {},
    options,
    context,
  );
}

/** A project (a PRD split into subtasks): its graph continues; merged subtasks stay merged. */
async function resumeProject(
  taskId: string,
  project: ProjectResume,
  options: ResumeCommandOptions,
  context: CommandContext,
  repoRoot: string,
): Promise<TaskSummary> {
  if (project.finished?.state === 'COMPLETE') {
    throw new UserError(
      'usage',
      `Task ${taskId} is already COMPLETE (see ${project.finished.notePath ?? `.agent-runner/task-${taskId}.md`}). ` +
        'Start a new task for further work: `agent-runner run --prd FILE`.',
    );
  }
  const config = await loadConfig({
    repoRoot,
    env: context.env,
    flags: flagsLayer(options),
    ...(options.config ? { configFile: path.resolve(context.cwd, options.config) } : {}),
  });
  return driveTask(
    {
      repoRoot,
      prd: project.prd,
      prdPath: project.prdPath,
      taskId,
      config,
      env: context.env,
      keepSandbox: false,
      dodSkipped: Boolean(options.skipDod),
      start: { kind: 'new' },
    },
    { project },
    options,
    context,
  );
}

export function registerResumeCommand(program: Command, context: CommandContext): void {
  program
    .command('resume')
    .description(
      'Continue a task after an interrupt, a failure or a crash, from its journal (.agent-runner/runs/<TASK-ID>/events.jsonl).',
    )
    .argument('<task-id>', 'the task to continue (see `agent-runner status`)')
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
    .option('--config <file>', 'configuration file (default: agent-runner.yaml in the repository root)')
    .action(async (taskId: string, options: ResumeCommandOptions) => {
      await resumeCommand(taskId, options, context);
    });
}
