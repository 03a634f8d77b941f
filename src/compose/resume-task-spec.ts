/**
 * The specification of a task's next attempt, rebuilt from its journal: what `resume` and the server's resume
 * hand to the same composition. A task continues from its plan, runs, Meta-agent calls and worker thread,
 * with what it was started with (PRD, base, a kept sandbox, a recording); a project (a PRD split into
 * subtasks) continues its graph. Throws a UserError naming the fix when there is nothing to resume.
 */
import path from 'node:path';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { ForgeKind } from '../core/events.js';
import { UserError } from '../errors.js';
import { journalPath, type JournalTaskState, readTaskJournal } from '../lifecycle/task-journal-state.js';
import { assertResumable, previousAttempt } from '../lifecycle/journal-resume.js';
import { readProjectJournal, type ProjectResume } from '../parallel/project-journal.js';
import type { ProjectOptions } from '../parallel/run-project.js';
import { loadPrd } from '../prd/load-prd.js';
import { taskLayout } from '../workspace/layout.js';
import type { FollowupStart, TaskSpec } from './task-spec.js';

export interface ResumeInput {
  repoRoot: string;
  taskId: string;
  /** Where a relative PRD path of an older journal is resolved. */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Configuration overrides (flags, a request's `config`). */
  overrides: Record<string, unknown>;
  configFile?: string;
  /** A time limit given for this attempt: the earlier attempts' time does not count against it. */
  newTimeout?: boolean;
  keepSandbox?: boolean;
  skipDod?: boolean;
  /** A scripted model for this attempt (the demo, a server started with one). */
  modelScript?: string;
}

export interface ResumedTask {
  spec: TaskSpec;
  projectOptions: ProjectOptions;
}

/**
 * The configuration of this attempt, with the forge the task was started with when this attempt names none
 * (`deliver.forge: auto`): a task started with `--forge` delivers to the same forge after `resume`.
 */
export async function configOf(
  input: Pick<ResumeInput, 'repoRoot' | 'env' | 'overrides' | 'configFile'>,
  startedForge: ForgeKind | undefined,
): Promise<Config> {
  const config = await loadConfig({
    repoRoot: input.repoRoot,
    env: input.env,
    flags: input.overrides,
    ...(input.configFile ? { configFile: input.configFile } : {}),
  });
  return withStartedForge(config, startedForge);
}

/** `config` with `forge` as deliver.forge when the config names none; a forge named now wins. */
export function withStartedForge(config: Config, forge: ForgeKind | undefined): Config {
  if (!forge || config.deliver.forge !== 'auto') return config;
  return { ...config, deliver: { ...config.deliver, forge } };
}

export async function resumeTaskSpec(input: ResumeInput): Promise<ResumedTask> {
  const { taskId } = input;
  const layout = taskLayout(input.repoRoot, taskId);
  const project = readProjectJournal(layout.runDir);
  if (project) return resumeProject(input, project);
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
        `Continue it with a new instruction: \`agent-runner followup ${taskId} --message TEXT\`.`,
    );
  }
  assertResumable(journal, journalPath(layout.runDir));
  const started = journal.options;
  const { prd, prdPath } = await startedPrd(journal, input.cwd);
  const config = await configOf(input, started?.forge);
  const previous = previousAttempt(journal);
  // An explicit --timeout is this attempt's budget; otherwise the task's wall clock covers every attempt.
  if (previous && input.newTimeout) previous.elapsedMs = 0;
  return {
    spec: {
      repoRoot: input.repoRoot,
      prd,
      prdPath,
      taskId,
      ...(started?.base !== undefined ? { base: started.base } : {}),
      config,
      env: input.env,
      // What the task was started with holds for every attempt: a kept sandbox, a recording.
      keepSandbox: Boolean(input.keepSandbox ?? started?.keepSandbox),
      dodSkipped: Boolean(input.skipDod ?? started?.dodSkipped),
      ...(started?.record || started?.replay || input.modelScript
        ? {
            models: {
              ...(started?.record ? { record: started.record } : {}),
              ...(started?.replay ? { replay: started.replay } : {}),
              ...(input.modelScript ? { script: input.modelScript } : {}),
            },
          }
        : {}),
      // No plan yet (it died while planning): the task simply starts over from the PRD.
      start: previous
        ? { kind: 'resume', previous, attempt: journal.attempts + 1, ...followupOf(journal) }
        : { kind: 'new' },
    },
    projectOptions: {},
  };
}

/** An attempt after a follow-up began continues that follow-up: its instruction, its revised plan, its budget. */
function followupOf(journal: JournalTaskState): { followup?: FollowupStart } {
  if (!journal.followup) return {};
  const { planned, elapsedBefore: _elapsed, ...followup } = journal.followup;
  return { followup: { ...followup, stage: planned ? 'planned' : 'unplanned' } };
}

/** The PRD the task was started with (journals of older versions did not record it: read again from its path). */
export async function startedPrd(
  journal: JournalTaskState,
  cwd: string,
): Promise<{ prd: string; prdPath: string }> {
  const started = journal.options;
  const prdPath = started?.prdPath ?? '';
  if (started?.prd) return { prd: started.prd, prdPath };
  if (!prdPath)
    throw new UserError(
      'task_not_found',
      `The journal of task ${journal.taskId} does not say which PRD it ran; start it again with \`agent-runner run --prd FILE --task-id ${journal.taskId}\`.`,
    );
  const resolved = path.resolve(cwd, prdPath);
  return { prd: await loadPrd(resolved), prdPath: resolved };
}

/** A project (a PRD split into subtasks): its graph continues; merged subtasks stay merged. */
async function resumeProject(input: ResumeInput, project: ProjectResume): Promise<ResumedTask> {
  const { taskId } = input;
  if (project.finished?.state === 'COMPLETE') {
    throw new UserError(
      'usage',
      `Task ${taskId} is already COMPLETE (see ${project.finished.notePath ?? `.agent-runner/task-${taskId}.md`}). ` +
        'Start a new task for further work: `agent-runner run --prd FILE`.',
    );
  }
  return {
    spec: {
      repoRoot: input.repoRoot,
      prd: project.prd,
      prdPath: project.prdPath,
      taskId,
      config: await configOf(input, project.forge),
      env: input.env,
      keepSandbox: false,
      dodSkipped: Boolean(input.skipDod),
      start: { kind: 'new' },
    },
    projectOptions: { project },
  };
}
