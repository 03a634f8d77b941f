/**
 * The specification of a new task from a PRD file in a repository: the PRD read and checked, the
 * configuration loaded (its layers: the file, the environment, the caller's overrides), the task id. `run`
 * builds it from its flags, the server from a request; both then hand it to the same composition.
 */
import { loadConfig } from '../config/load.js';
import { loadPrd } from '../prd/load-prd.js';
import type { ModelSource, TaskSpec } from './task-spec.js';

export interface NewTaskInput {
  repoRoot: string;
  prdPath: string;
  /** The PRD's text when the caller read it already (else read from `prdPath`). */
  prd?: string;
  env: NodeJS.ProcessEnv;
  /** Configuration overrides, as a config layer (flags, a request's `config`). */
  overrides: Record<string, unknown>;
  configFile?: string;
  taskId?: string;
  base?: string;
  models?: ModelSource;
  keepSandbox?: boolean;
  skipDod?: boolean;
}

export async function newTaskSpec(input: NewTaskInput): Promise<TaskSpec> {
  const prd = input.prd ?? (await loadPrd(input.prdPath));
  const config = await loadConfig({
    repoRoot: input.repoRoot,
    env: input.env,
    flags: input.overrides,
    ...(input.configFile ? { configFile: input.configFile } : {}),
  });
  const { newTaskId } = await import('../app.js');
  const models = input.models ?? {};
  return {
    repoRoot: input.repoRoot,
    prd,
    prdPath: input.prdPath,
    taskId: input.taskId ?? newTaskId(prd),
    ...(input.base !== undefined ? { base: input.base } : {}),
    config,
    env: input.env,
    keepSandbox: Boolean(input.keepSandbox),
    dodSkipped: Boolean(input.skipDod),
    start: { kind: 'new' },
    ...(Object.keys(models).length > 0 ? { models } : {}),
  };
}
