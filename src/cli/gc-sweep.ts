/**
 * What `agent-runner gc` does (gc-command.ts registers it): dead runners' containers, stale capped mounts,
 * never-started run directories and finished tasks' worktrees, each only when nothing would be lost.
 */
import { EXIT_CODES } from '../errors.js';
import {
  findDeadOwnerSandboxes,
  listLabelledSandboxes,
  removeSandboxes,
} from '../lifecycle/orphan-sandboxes.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { removeNotStarted } from '../lifecycle/never-started.js';
import { listTasks, type TaskEntry } from '../lifecycle/task-inventory.js';
import { taskLayout } from '../workspace/layout.js';
import { capImagePath, capVolumesUnder, releaseCapVolume } from '../sandbox/cap-volume.js';
import { cleanFinishedTask } from '../lifecycle/worktree-cleanup.js';
import { loadConfig } from '../config/load.js';
import { runnerIsRoot, type OwnershipApplier } from '../workspace/scope/permissions.js';
import type { DockerSandboxRuntime } from '../sandbox/docker-runtime.js';
import { VERSION } from '../version.js';
import { commandRepositories, type CommandRepository } from './command-repositories.js';
import type { CommandContext } from './program.js';
import type { GcCommandOptions } from './gc-command.js';

export async function gcCommand(options: GcCommandOptions, context: CommandContext): Promise<void> {
  for (const repository of await commandRepositories(options.repo, context)) {
    if (repository.url !== null) context.output.out(`${repository.url} (${repository.root})`);
    await gcRepository(repository, options, context);
  }
}

async function gcRepository(
  repository: CommandRepository,
  options: GcCommandOptions,
  context: CommandContext,
): Promise<void> {
  const { output, env } = context;
  // Imported here, as `status` does: every other command's start would otherwise load dockerode.
  const [{ createDockerClient, describeDockerHost }, { DockerSandboxRuntime }] = await Promise.all([
    import('../sandbox/docker-client.js'),
    import('../sandbox/docker-runtime.js'),
  ]);
  const runtime = new DockerSandboxRuntime(createDockerClient(env), { version: VERSION, env });
  const dryRun = Boolean(options.dryRun);
  const verb = dryRun ? 'would remove' : 'removed';

  try {
    // gc removes the containers kept with --keep-sandbox too: the person looked, now they go.
    const dead = await findDeadOwnerSandboxes(runtime, options.all ? {} : { repoRoot: repository.root });
    const orphans = [...dead.orphans, ...dead.kept];
    const swept = dryRun ? { removed: orphans, failed: [] } : await removeSandboxes(runtime, orphans);
    for (const sandbox of swept.removed)
      output.out(
        `${verb} container ${sandbox.name} (task ${sandbox.taskId}, ${sandbox.kept ? 'kept with --keep-sandbox' : `runner pid ${sandbox.pid} is gone`})`,
      );
    for (const failure of swept.failed)
      output.err(`agent-runner: could not remove container ${failure.sandbox.name}: ${failure.message}`);
  } catch (error) {
    output.err(
      `agent-runner: containers not checked: Docker is not reachable at ${describeDockerHost(env)} (${(error as Error).message}). ` +
        'Start it and run `agent-runner gc` again.',
    );
    context.setExitCode(EXIT_CODES.environment);
  }

  // Not root: sandboxes hold files of the guard uid that only a helper container can give back.
  const applier = runnerIsRoot() ? undefined : await ownershipApplier(runtime, repository.root, env);
  const { tasks } = await listTasks(repository.root);
  const statusOf = new Map(tasks.map((task) => [task.taskId, task.status]));
  // This repository's containers, listed once (the dead runners' are gone by now): a task id is unique within a
  // repository, and another one's container of the same id (a suite's fixed ids, two clones of one project) says
  // nothing about this task.
  const labelled = await listLabelledSandboxes(runtime, { repoRoot: repository.root }).catch(() => []);
  await releaseStaleMounts(repository.root, tasks, dryRun, output);
  for (const task of tasks) {
    if (task.status === 'never_started') {
      sweepNotStarted(repository.root, task, options, output);
      continue;
    }
    if (task.status !== 'finished' || (!task.worktreePath && !task.sandboxRepoPath)) continue;
    // A project's subtasks go with the project: not while it runs or can still be resumed.
    if (task.parent && statusOf.get(task.parent) !== 'finished') continue;
    const verdict = await cleanFinishedTask(repository.root, task, {
      force: Boolean(options.force),
      dryRun,
      ...(applier ? { applier } : {}),
      containersOf: async (taskId) =>
        labelled.filter((sandbox) => sandbox.taskId === taskId).map((sandbox) => sandbox.name),
    });
    if (verdict.error)
      output.err(`agent-runner: could not remove the worktree of ${task.taskId}: ${verdict.error}`);
    else if (verdict.blocked) output.out(`kept ${task.taskId}: ${verdict.blocked}`);
    else if (verdict.keep.length > 0 && !options.force)
      output.out(
        `kept ${task.taskId}: ${verdict.keep.join('; ')} (--force removes the worktree; the branch stays)`,
      );
    else
      output.out(
        `${verb} the worktree and sandbox of ${task.taskId} (${task.state}); branch ${task.branch} kept`,
      );
  }
}

/**
 * The capped file systems (hard disk caps) a runner that died left mounted: unmounted for every task whose
 * runner is not alive; their images stay (a resume mounts them again, the sandbox's removal deletes them).
 */
async function releaseStaleMounts(
  repoRoot: string,
  tasks: readonly TaskEntry[],
  dryRun: boolean,
  output: CommandContext['output'],
): Promise<void> {
  for (const task of tasks) {
    if (task.status === 'running' || task.status === 'unknown') continue;
    const layout = taskLayout(repoRoot, task.taskId);
    // Still mounted (the runner was killed), or unmounted with the files inside (it exited without its end).
    const held = new Set([
      ...(await capVolumesUnder(layout.sandboxDir)),
      ...(await capVolumesUnder(layout.runDir)),
      ...[layout.sandboxRepoPath, path.join(layout.runDir, 'codex-home')].filter((dir) =>
        existsSync(capImagePath(dir)),
      ),
    ]);
    for (const mountPath of held) {
      if (!dryRun) await releaseCapVolume(mountPath);
      output.out(
        `${dryRun ? 'would release' : 'released'} ${mountPath} (task ${task.taskId}, runner gone: its files are back in the directory)`,
      );
    }
  }
}

/**
 * A run directory with no task in it (a `plan`'s logs, a runner that died before its task started): removed
 * once quiet, unless a worktree, a sandbox or a container of that id is still there (those go their own way).
 */
function sweepNotStarted(
  repoRoot: string,
  task: TaskEntry,
  options: GcCommandOptions,
  output: CommandContext['output'],
): void {
  if (task.worktreePath || task.sandboxRepoPath || task.containers.length > 0) return;
  const runDir = taskLayout(repoRoot, task.taskId).runDir;
  if (!existsSync(runDir)) return;
  const dryRun = Boolean(options.dryRun);
  const swept = removeNotStarted(runDir, { force: Boolean(options.force), dryRun });
  if (swept.kept) output.out(`kept ${task.taskId} (never started): ${swept.kept}`);
  else
    output.out(`${dryRun ? 'would remove' : 'removed'} the run directory of ${task.taskId} (never started)`);
}

async function ownershipApplier(
  runtime: DockerSandboxRuntime,
  repoRoot: string,
  env: NodeJS.ProcessEnv,
): Promise<OwnershipApplier | undefined> {
  try {
    const { resolveWorkerImage } = await import('../app.js');
    const image = await resolveWorkerImage(await loadConfig({ repoRoot, env }));
    return (hostDir, entries) =>
      runtime.applyOwnership({ taskId: 'gc', repoPath: repoRoot, image, hostDir, entries });
  } catch {
    return undefined;
  }
}
