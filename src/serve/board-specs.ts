/**
 * What a client asks the board to run, as the TaskSpec the composition takes: a new task (its PRD named or
 * given as text), a task resumed from its journal, a follow-up of an ended task. Every file a client names is
 * a file of the repository, checked before it is read (client-inputs.ts); the board then runs the spec.
 */
import { followupTaskSpec } from '../compose/followup-task-spec.js';
import { newTaskSpec } from '../compose/new-task-spec.js';
import { resumeTaskSpec, type ResumedTask } from '../compose/resume-task-spec.js';
import type { TaskSpec } from '../compose/task-spec.js';
import type { FollowupRequest, StartTaskRequest } from './api-schemas.js';
import { checkClientInputs, writePrdText } from './client-inputs.js';

/** The board's side of a spec: its repository, environment, clock and the server's scripted model. */
export interface BoardSpecContext {
  repoRoot: string;
  env: NodeJS.ProcessEnv;
  now: () => Date;
  /** The scripted model of every task that names none (`serve --model-script`: the demo). */
  modelScript?: string;
}

function scriptOf(context: BoardSpecContext, given: string | undefined): string | undefined {
  return given ?? context.modelScript;
}

/** A new task: the PRD given as text is written to a file and read back with the CLI's checks. */
export async function startSpec(context: BoardSpecContext, request: StartTaskRequest): Promise<TaskSpec> {
  const {
    prd: named,
    modelScript,
    overrides,
  } = await checkClientInputs(context.repoRoot, context.env, request);
  const prdPath = named?.path ?? (await writePrdText(context.repoRoot, request.prd ?? '', context.now()));
  const script = scriptOf(context, modelScript);
  return newTaskSpec({
    repoRoot: context.repoRoot,
    prdPath,
    ...(named ? { prd: named.text } : {}),
    env: context.env,
    overrides,
    ...(request.taskId !== undefined ? { taskId: request.taskId } : {}),
    ...(request.base !== undefined ? { base: request.base } : {}),
    ...(script ? { models: { script } } : {}),
    skipDod: Boolean(request.skipDod),
  });
}

/** A task's next attempt from its journal, as `agent-runner resume` builds it. */
export async function resumeSpec(
  context: BoardSpecContext,
  taskId: string,
  overrides: Record<string, unknown>,
  modelScript: string | undefined,
): Promise<ResumedTask> {
  const checked = await checkClientInputs(context.repoRoot, context.env, {
    config: overrides,
    ...(modelScript !== undefined ? { modelScript } : {}),
  });
  const script = scriptOf(context, checked.modelScript);
  return resumeTaskSpec({
    repoRoot: context.repoRoot,
    taskId,
    cwd: context.repoRoot,
    env: context.env,
    overrides: checked.overrides,
    ...(script ? { modelScript: script } : {}),
  });
}

/** A follow-up of an ended task, as `agent-runner followup ID --message` builds it (`pr`: deliver after it). */
export async function followupSpec(
  context: BoardSpecContext,
  taskId: string,
  request: FollowupRequest,
): Promise<TaskSpec> {
  const checked = await checkClientInputs(context.repoRoot, context.env, {
    config: request.config ?? {},
    ...(request.modelScript !== undefined ? { modelScript: request.modelScript } : {}),
  });
  const script = scriptOf(context, checked.modelScript);
  return followupTaskSpec({
    repoRoot: context.repoRoot,
    taskId,
    instruction: request.message,
    cwd: context.repoRoot,
    env: context.env,
    overrides: request.pr ? { ...checked.overrides, deliver: { pr: true } } : checked.overrides,
    ...(script ? { modelScript: script } : {}),
  });
}
