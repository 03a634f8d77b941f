/**
 * Running one task: under its lock, composed once, run to a terminal state, closed. Every entry point calls
 * {@link runTask} (or {@link runLockedTask} when it already holds the task's lock).
 */
import { mkdir } from 'node:fs/promises';
import { configuredWorkers } from '../config/workers.js';
import type { Config } from '../config/schema.js';
import { readModelScript, startScriptedModelServer } from '../demo/scripted-model-server.js';
import { taskLayout } from '../workspace/layout.js';
import { composeTask, type ComposedTask } from './compose-task.js';
import { lockTask } from './lock-task.js';
import type { TaskHost } from './task-host.js';
import type { TaskHooks, TaskResult, TaskSpec } from './task-spec.js';

/** Takes the task's lock (refused, exit 2, while another live process works on this id) and runs the task. */
export async function runTask(host: TaskHost, spec: TaskSpec, hooks: TaskHooks = {}): Promise<TaskResult> {
  const lock = await lockTask(spec, hooks, commandOf(spec));
  try {
    return await runLockedTask(host, spec, hooks);
  } finally {
    lock.release();
  }
}

/** The command the lock names: what started this attempt. */
function commandOf(spec: TaskSpec): string {
  if (spec.start.kind !== 'resume') return 'run';
  return spec.start.followup?.stage === 'new' ? 'followup' : 'resume';
}

/** Runs a task whose lock the caller holds. */
export function runLockedTask(host: TaskHost, spec: TaskSpec, hooks: TaskHooks = {}): Promise<TaskResult> {
  return withComposedTask(host, spec, hooks, (task) => task.run());
}

/**
 * Composes the task (its lock is the caller's), hands it to `use`, and closes it whatever happens. Under
 * `--model-script` a scripted model served by agent-runner itself stands in for both endpoints meanwhile.
 */
export async function withComposedTask<T>(
  host: TaskHost,
  spec: TaskSpec,
  hooks: TaskHooks,
  use: (task: ComposedTask) => Promise<T>,
): Promise<T> {
  const script = spec.models?.script;
  if (!script) return composeAndUse(host, spec, hooks, use);
  const server = await startScriptedModelServer(
    await readModelScript(script, spec.taskId, spec.config.worker.type),
  );
  try {
    // Every configured worker asks the scripted server, each in its own protocol (claude, gemini: the origin).
    const profiles = configuredWorkers(spec.config);
    const workers = { ...spec.config.workers };
    for (const profile of profiles)
      workers[profile.type] = {
        extraArgs: [],
        ...workers[profile.type],
        baseUrl:
          profile.protocol === 'responses'
            ? server.baseUrl
            : profile.protocol === 'chat'
              ? server.workerChatBaseUrl
              : server.origin,
      };
    const config: Config = {
      ...spec.config,
      meta: { ...spec.config.meta, baseUrl: server.baseUrl },
      worker: { ...spec.config.worker, baseUrl: server.baseUrl },
      workers,
    };
    const env = {
      ...spec.env,
      [config.meta.apiKeyEnv]: spec.env[config.meta.apiKeyEnv] || 'scripted-model',
    };
    for (const profile of profiles) env[profile.apiKeyEnv] = env[profile.apiKeyEnv] || 'scripted-model';
    return await composeAndUse(host, { ...spec, config, env }, hooks, use);
  } finally {
    await server.close();
  }
}

async function composeAndUse<T>(
  host: TaskHost,
  spec: TaskSpec,
  hooks: TaskHooks,
  use: (task: ComposedTask) => Promise<T>,
): Promise<T> {
  await mkdir(taskLayout(spec.repoRoot, spec.taskId).runDir, { recursive: true });
  const task = await composeTask(host, spec, hooks);
  try {
    return await use(task);
  } finally {
    await task.close();
  }
}
