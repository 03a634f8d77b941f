/**
 * The composition root: what a process needs to run tasks with the real adapters (Docker, git, codex, the
 * OpenAI SDK). A command makes one {@link App}; a server would make one and run many tasks on it. Tests and
 * benchmarks pass their own pieces through {@link AppDependencies}. How one task is put together is
 * `src/compose/compose-task.ts`; every way a task starts comes through `runTask` or `run`.
 */
import { randomBytes } from 'node:crypto';
import { TaskHost, type AppDependencies } from './compose/task-host.js';
import type { TaskHooks, TaskResult, TaskSpec } from './compose/task-spec.js';
import type { Config } from './config/schema.js';
import type { TaskSummary } from './core/types.js';
import { titleOf } from './meta/meta-agent-port.js';
import type { Redaction } from './notes/redact.js';
import type { ProjectHooks, ProjectOptions } from './parallel/run-project.js';
import { maySplit } from './compose/may-split.js';

export { systemClock, type AppDependencies } from './compose/task-host.js';
export type { TaskHooks, TaskResult, TaskSpec } from './compose/task-spec.js';

export interface App {
  readonly host: TaskHost;
  /** A PRD planned once, then one task or a project of subtasks (`run`, `resume`). */
  run(spec: TaskSpec, hooks?: ProjectHooks, options?: ProjectOptions): Promise<TaskSummary>;
  /** One task, never split. */
  runTask(spec: TaskSpec, hooks?: TaskHooks): Promise<TaskResult>;
}

/** The worker image the config asks for (`sandbox.image`, else the tag of the package's Dockerfile). */
export async function resolveWorkerImage(config: Config): Promise<string> {
  // Imported on use: the Docker side's modules are not needed before a task's plan.
  const dockerSide = await import('./compose/docker-side.js');
  return dockerSide.resolveWorkerImage(config);
}

/** The app of one process: its environment, its redaction point, and any replaced pieces. */
export function createApp(
  env: NodeJS.ProcessEnv,
  dependencies: AppDependencies = {},
  redaction?: Redaction,
): App {
  const host = new TaskHost(env, dependencies, redaction);
  return {
    host,
    async run(spec, hooks = {}, options = {}) {
      // A task that cannot be split runs as one task, without the planner of parallel work.
      if (!options.project && !maySplit(spec, options)) {
        const onEvent = hooks.onEvent as TaskHooks['onEvent'];
        const { runTask } = await import('./compose/run-task.js');
        return (await runTask(host, spec, { ...hooks, onEvent })).summary;
      }
      const { runProject } = await import('./parallel/run-project.js');
      return runProject(host, spec, hooks, options);
    },
    runTask: async (spec, hooks = {}) => (await import('./compose/run-task.js')).runTask(host, spec, hooks),
  };
}

/** A task id from the PRD's title: `add-slugify-3f9a1c`. */
export function newTaskId(prd: string): string {
  const slug = titleOf(prd, 'task')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `${slug || 'task'}-${randomBytes(3).toString('hex')}`;
}
