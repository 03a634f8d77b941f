/**
 * Composition of parallel work: the entry `run` calls. The planner (Meta-agent) answers `plan_task` with one
 * task's criteria (then the task runs as always, with that plan) or with subtasks; subtasks are then driven by
 * the orchestrator with the real pieces: each subtask is a whole task of today through `runTask` (its own
 * branch `agent-runner/<ID>--<SUB>`, sandbox, gateway token, worker runs, facts, DoD, note) with its write
 * scope as `scope.write`; the integration branch `agent-runner/<ID>` lives in a host worktree; the combined
 * DoD runs in a sandbox of its own on the integration branch's head; the project's own Meta-agent calls
 * (plan, reviews, re-plans) go through a gateway of their own.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  newTaskId,
  resolveWorkerImage,
  runTask,
  systemClock,
  type AppDependencies,
  type RunTaskRequest,
} from '../app.js';
import type { Config } from '../config/schema.js';
import type { DodOutcome, Plan, TaskSummary, Usage } from '../core/types.js';
import { totalTokens, ZERO_USAGE } from '../core/usage.js';
import { EXIT_CODES } from '../errors.js';
import { GatewayCheckedMetaModel } from '../gateway/gateway-guards.js';
import { startTaskGateway, type TaskGateway } from '../gateway/task-gateway.js';
import { previousAttempt, readTaskJournal } from '../lifecycle/task-journal-state.js';
import { taskSandboxPorts } from '../lifecycle/task-sandbox-ports.js';
import { acquireTaskLock, type TaskLock } from '../lifecycle/task-lock.js';
import { titleOf } from '../meta/meta-agent-port.js';
import { createOpenAiChatModel } from '../meta/openai-chat-model.js';
import { readNoteMemory } from '../notes/memory.js';
import { configSecrets, Redaction, type Redactor } from '../notes/redact.js';
import type { AcceptanceCriterion } from '../protocol/messages.js';
import { VERSION } from '../version.js';
import { git, tryGit } from '../workspace/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import { removeTaskSandbox } from '../workspace/remove-task-sandbox.js';
import { resolveCommit } from '../workspace/tree-entries.js';
import { GitIntegrationBranch } from './integration-branch.js';
import { ProjectOrchestrator, type ProjectOutcome } from './orchestrator.js';
import { createParallelMeta, type ParallelMeta } from './parallel-meta.js';
import type { ProjectMetaPort, SubtaskRunnerPort } from './ports.js';
import type { PlannedSubtask, ProjectEvent, StampedProjectEvent } from './project-events.js';
import { PROJECT_JOURNAL, type ProjectResume } from './project-journal.js';
import { writeProjectNote } from './project-note.js';
import { defaultParallelMax } from './scheduler.js';

export interface RunProjectRequest extends Omit<RunTaskRequest, 'onEvent'> {
  /** `--single`: never split, whatever `parallel.split` says. */
  single?: boolean;
  /** `resume <ID>` of a project: continue its graph from the project journal (no new plan). */
  project?: ProjectResume;
  onEvent?: (event: StampedProjectEvent) => void;
}

/** A plan from the protocol's criteria (the core uses the protocol's criterion type as is). */
export function planOf(title: string, criteria: readonly AcceptanceCriterion[]): Plan {
  return { title, acceptanceCriteria: [...criteria] };
}

/** Whether this run may be split: `parallel.split: auto`, no `--single`, and nothing that needs one task. */
export function maySplit(request: RunProjectRequest): boolean {
  return (
    request.config.parallel.split === 'auto' &&
    !request.single &&
    !request.resume &&
    // One scripted model or one cassette serves one task's calls in order; parallel calls would interleave.
    !request.modelScript &&
    !request.record &&
    !request.replay
  );
}

/** `parallel.max`, or what the machine holds. */
export function parallelMax(config: Config): number {
  return (
    config.parallel.max ??
    defaultParallelMax({
      cores: os.availableParallelism(),
      freeMemoryBytes: os.freemem(),
      sandboxMemoryBytes: config.sandbox.memory,
    })
  );
}

/** Runs a PRD: planned, then either one task as always or a project of subtasks. */
export async function runProject(
  request: RunProjectRequest,
  dependencies: AppDependencies = {},
): Promise<TaskSummary> {
  const forward = request.onEvent as RunTaskRequest['onEvent'];
  if (!request.project && !maySplit(request)) return runTask({ ...request, onEvent: forward }, dependencies);
  const taskId = request.taskId ?? newTaskId(request.prd);
  const layout = taskLayout(request.repoRoot, taskId);
  await mkdir(layout.runDir, { recursive: true });
  const { config, env } = request;
  // One redaction point for every writer of the project and its subtasks (they add to the same one).
  const redaction = request.redaction ?? new Redaction();
  const secrets = configSecrets(config, env);
  redaction.add(secrets.values, secrets.patterns);
  const redact: Redactor = redaction.redact;
  const journalFile = path.join(layout.runDir, PROJECT_JOURNAL);
  const clock = dependencies.clock ?? systemClock;
  const emit = (event: ProjectEvent | StampedProjectEvent) => {
    const stamped = (
      'at' in event ? event : { ...event, at: new Date(clock.now()).toISOString() }
    ) as StampedProjectEvent;
    request.onEvent?.(stamped);
    // A subtask's events live in its own journal; the project's journal keeps the project's events and when
    // each subtask and each worker run started and ended (enough to see what ran at once).
    if (PROJECT_EVENT_TYPES.has(stamped.type) || JOURNALLED_TASK_EVENTS.has(stamped.type)) {
      mkdirSync(layout.runDir, { recursive: true });
      appendFileSync(journalFile, `${redaction.redactJsonText(JSON.stringify(stamped))}\n`);
    }
  };

  let lock: TaskLock | null = acquireTaskLock(layout.runDir, { taskId, command: 'run' });
  let gateway: TaskGateway | null = null;
  try {
    // Imported here: dockerode is the biggest module of a start, and a task that is not split never needs it here.
    const { createDockerClient, pingDocker } = await import('../sandbox/docker-client.js');
    const docker = dependencies.docker ?? createDockerClient(env);
    await pingDocker(docker, env);
    const spent = request.project?.spent.usage;
    gateway = await startTaskGateway({
      config,
      env,
      repoRoot: request.repoRoot,
      redaction,
      onLog: (line) => {
        try {
          appendFileSync(
            path.join(layout.runDir, 'gateway.log'),
            `${new Date(clock.now()).toISOString()} ${line}\n`,
          );
        } catch {
          // The project's journal reports a full disk; the gateway keeps answering meanwhile.
        }
      },
      // The project's budget: its own Meta-agent calls (plan, reviews, re-plans) and every subtask's spending.
      ...(spent ? { spent: { tokens: totalTokens(spent), costUsd: spent.costUsd } } : {}),
    });
    const model = new GatewayCheckedMetaModel(
      dependencies.metaModel ??
        createOpenAiChatModel(config, env, {
          baseUrl: gateway.meta.baseUrl,
          apiKey: gateway.meta.apiKey,
          displayUrl: config.meta.baseUrl,
        }),
      gateway.gateway,
      gateway.budget,
    );
    const meta = createParallelMeta({ model, config, logDir: path.join(layout.runDir, 'meta'), redact });
    if (request.project) {
      return await driveProject({
        request,
        dependencies,
        taskId,
        subtasks: request.project.subtasks,
        meta,
        gateway,
        redaction,
        emit,
        spent: request.project.spent,
        resume: request.project,
      });
    }
    const planned = await meta
      .plan({
        taskId,
        prd: request.prd,
        memory: (await readNoteMemory(layout.stateDir, taskId)).map(({ title, summary }) => ({
          title,
          summary,
        })),
        allowSubtasks: true,
        ...(request.signal ? { signal: request.signal } : {}),
      })
      .then(
        (answer) => ({ answer }),
        (error: unknown) => ({ error }),
      );
    const release = async () => {
      await gateway?.close();
      gateway = null;
      // The task takes its own lock on the same id.
      lock?.release();
      lock = null;
    };
    if ('error' in planned) {
      await release();
      // No plan, no project: the task ends FAILED with the planner's error, its note written as for any task.
      return await runTask(
        { ...request, redaction, taskId, onEvent: forward, planError: planned.error },
        dependencies,
      );
    }
    const planUsage = planned.answer.usage;
    const payload = planned.answer.message.payload;
    if (!('subtasks' in payload)) {
      emit({ type: 'project_plan', usage: planUsage, split: false });
      await release();
      return await runTask(
        {
          ...request,
          redaction,
          taskId,
          onEvent: forward,
          plan: {
            plan: planOf(titleOf(request.prd, taskId), payload.acceptance_criteria),
            usage: planUsage,
            metaCalls: 1,
          },
        },
        dependencies,
      );
    }
    emit({ type: 'project_plan', usage: planUsage, split: true });
    const subtasks: PlannedSubtask[] = payload.subtasks.map((subtask) => ({
      id: subtask.id,
      title: subtask.title,
      prd: subtask.prd,
      plan: planOf(subtask.title, subtask.acceptance_criteria),
      writeScope: subtask.write_scope,
      readScope: subtask.read_scope,
      blockedBy: subtask.blocked_by,
    }));
    return await driveProject({
      request,
      dependencies,
      taskId,
      subtasks,
      meta,
      gateway,
      redaction,
      emit,
      spent: { metaCalls: 1, usage: planUsage },
    });
  } finally {
    await gateway?.close();
    lock?.release();
  }
}

const JOURNALLED_TASK_EVENTS: ReadonlySet<string> = new Set([
  'task_started',
  'worker_started',
  'worker_finished',
  'task_finished',
]);

const PROJECT_EVENT_TYPES: ReadonlySet<string> = new Set([
  'project_started',
  'project_plan',
  'subtask_state',
  'subtask_waiting',
  'subtask_finished',
  'review',
  'replan',
  'merge',
  'combined_dod',
  'fixup',
  'project_finished',
]);

interface DriveProjectInput {
  request: RunProjectRequest;
  dependencies: AppDependencies;
  taskId: string;
  subtasks: PlannedSubtask[];
  meta: ParallelMeta;
  gateway: TaskGateway;
  redaction: Redaction;
  emit: (event: ProjectEvent | StampedProjectEvent) => void;
  spent: { metaCalls: number; usage: Usage };
  resume?: ProjectResume;
}

async function driveProject(input: DriveProjectInput): Promise<TaskSummary> {
  const { request, dependencies, taskId, subtasks, gateway, redaction, emit } = input;
  const redact = redaction.redact;
  const { config, env, repoRoot } = request;
  const clock = dependencies.clock ?? systemClock;
  const startedAt = clock.now();
  const layout = taskLayout(repoRoot, taskId);
  const baseSha = input.resume?.baseSha ?? (await resolveCommit(repoRoot, request.base ?? 'HEAD'));
  if (baseSha === null) throw new Error(`--base ${request.base ?? 'HEAD'} does not name a commit`);
  const [{ createDockerClient }, { DockerSandboxRuntime }] = await Promise.all([
    import('../sandbox/docker-client.js'),
    import('../sandbox/docker-runtime.js'),
  ]);
  const docker = dependencies.docker ?? createDockerClient(env);
  const runtime = dependencies.runtime ?? new DockerSandboxRuntime(docker, { version: VERSION, env, redact });
  const image = await resolveWorkerImage(config);
  const dodSkipped = request.dodSkipped || config.dod.skip;
  let checks = 0;

  const integration = await GitIntegrationBranch.open({
    repoRoot,
    taskId,
    baseSha,
    runDod: async (headSha, _label, signal) => {
      if (dodSkipped) return { status: 'skipped', results: [], ranOnDirtyTree: false, source: 'skipped' };
      checks += 1;
      return combinedDod({
        request,
        runtime,
        gateway,
        image,
        taskId: `${taskId}--check-${checks}`,
        headSha,
        signal,
      });
    },
  });
  const max = parallelMax(config);
  emit({
    type: 'project_started',
    taskId,
    branch: integration.branch,
    baseSha,
    max,
    subtasks,
    prd: request.prd,
    prdPath: request.prdPath,
  });

  const runner: SubtaskRunnerPort = {
    async run(run) {
      let dod: DodOutcome | undefined;
      let workerSummary: string | undefined;
      // A subtask begun by an earlier attempt of the project continues from its own journal.
      const journal = readTaskJournal(taskLayout(repoRoot, run.taskId).runDir, run.taskId);
      const previous = journal ? previousAttempt(journal) : null;
      const summary = await runTask(
        {
          ...request,
          redaction,
          projectBudget: gateway.budget,
          projectMetaCalls: run.metaCalls,
          taskId: run.taskId,
          prd: run.prd,
          base: run.base,
          keepSandbox: false,
          config: {
            ...config,
            // The subtask's write scope is a physical limit, like any task's scope.write.
            scope: {
              ...config.scope,
              write: run.writeScope,
              read: [...new Set([...config.scope.read, ...run.readScope])],
            },
            limits: {
              ...config.limits,
              wallClock: run.limits.wallClockMs,
              maxMetaCalls: run.limits.maxMetaCalls,
              ...(run.limits.maxTokens !== undefined ? { maxTokens: run.limits.maxTokens } : {}),
              ...(run.limits.maxCostUsd !== undefined ? { maxCostUsd: run.limits.maxCostUsd } : {}),
            },
          },
          ...(previous
            ? { resume: { previous } }
            : { plan: { plan: run.plan, usage: ZERO_USAGE, metaCalls: 0 } }),
          ...(run.signal ? { signal: run.signal } : {}),
          onEvent: (event) => {
            if (event.type === 'dod') dod = event.dod;
            if (event.type === 'run_recorded') workerSummary = event.record.finalMessage ?? undefined;
            run.onEvent({ ...event, subtask: run.subtask });
          },
        },
        dependencies,
      );
      return { summary, ...(dod ? { dod } : {}), ...(workerSummary ? { workerSummary } : {}) };
    },
  };
  const projectMeta: ProjectMetaPort = {
    async review({ taskId: subtaskTaskId, subtask, evidence, signal }) {
      const result = await input.meta.review({
        taskId: subtaskTaskId,
        prd: subtask.prd,
        acceptanceCriteria: subtask.plan.acceptanceCriteria,
        evidence,
        ...(signal ? { signal } : {}),
      });
      const { verdict, summary, findings } = result.message.payload;
      return { review: { verdict, summary, findings }, usage: result.usage };
    },
    async replan({ taskId: subtaskTaskId, subtask, findings, reason, signal }) {
      const prd = [
        subtask.prd.trimEnd(),
        '',
        `The last attempt of this subtask was not merged: ${reason}`,
        ...findings.map(
          (finding) =>
            `- ${finding.file}${finding.line ? `:${finding.line}` : ''} (${finding.severity}): ${finding.message}`,
        ),
      ].join('\n');
      const result = await input.meta.plan({
        taskId: subtaskTaskId,
        prd,
        allowSubtasks: false,
        ...(signal ? { signal } : {}),
      });
      const payload = result.message.payload;
      const criteria = 'acceptance_criteria' in payload ? payload.acceptance_criteria : [];
      return { plan: planOf(subtask.title, criteria), usage: result.usage };
    },
  };

  const orchestrator = new ProjectOrchestrator(
    {
      taskId,
      prd: request.prd,
      subtasks,
      max,
      budget: {
        wallClockMs: config.limits.wallClock,
        maxMetaCalls: config.limits.maxMetaCalls,
        ...(config.limits.maxTokens !== undefined ? { maxTokens: config.limits.maxTokens } : {}),
        ...(config.limits.maxCostUsd !== undefined ? { maxCostUsd: config.limits.maxCostUsd } : {}),
      },
      maxReplans: 1,
      maxFixups: 1,
      spent: input.spent,
      ...(input.resume ? { merged: input.resume.merged, attempts: input.resume.attempts } : {}),
    },
    { runner, integration, meta: projectMeta, clock, emit },
  );
  let outcome: ProjectOutcome;
  try {
    outcome = await orchestrator.run(request.signal);
  } catch (error) {
    emit({ type: 'subtask_waiting', subtask: '*', kind: 'error', reason: (error as Error).message });
    throw error;
  }
  const finishedAt = clock.now();
  const notePath = await writeProjectNote(
    {
      taskId,
      title: titleOf(request.prd, taskId),
      prd: request.prd,
      prdPath: request.prdPath,
      repoRoot,
      branch: integration.branch,
      baseSha,
      worktreePath: integration.worktreePath,
      max,
      startedAt,
      finishedAt,
      outcome,
      redact,
    },
    layout.stateDir,
  );
  const summary: TaskSummary = {
    taskId,
    title: titleOf(request.prd, taskId),
    state: outcome.state,
    reason: outcome.reason,
    branch: integration.branch,
    headSha: outcome.headSha,
    notePath,
    worktreePath: integration.worktreePath,
    runs: outcome.subtasks.reduce(
      (sum, record) => sum + record.attempts.reduce((runs, attempt) => runs + attempt.runs, 0),
      0,
    ),
    metaCalls: outcome.metaCalls,
    usage: outcome.usage,
    durationMs: finishedAt - startedAt,
    exitCode:
      outcome.state === 'COMPLETE'
        ? EXIT_CODES.complete
        : request.signal?.aborted
          ? EXIT_CODES.interrupted
          : outcome.state === 'FAILED'
            ? EXIT_CODES.failed
            : EXIT_CODES.needsReview,
    error: null,
    basis: [
      `${outcome.subtasks.filter((record) => record.state === 'merged').length} of ${outcome.subtasks.length} subtasks merged into ${integration.branch}`,
      `combined DoD on the integration head: ${outcome.combinedDod?.status ?? 'not run'}`,
    ],
    // Each subtask's criteria and their evidence are in its own summary and note.
    criteria: [],
  };
  emit({ type: 'project_finished', summary });
  return summary;
}

interface CombinedDodInput {
  request: RunProjectRequest;
  runtime: NonNullable<AppDependencies['runtime']>;
  gateway: TaskGateway;
  image: string;
  /** `<ID>--check-<N>`: a throwaway workspace on the integration head, removed afterwards. */
  taskId: string;
  headSha: string;
  signal?: AbortSignal;
}

/** The DoD on a commit of the integration branch, in a sandbox made for it and removed after. */
async function combinedDod(input: CombinedDodInput): Promise<DodOutcome> {
  const { request, runtime, gateway, taskId } = input;
  const { config, repoRoot } = request;
  const layout = taskLayout(repoRoot, taskId);
  const { workspace, sandboxes } = taskSandboxPorts({
    runtime,
    config,
    image: input.image,
    repoRoot,
    taskId,
    base: input.headSha,
    dodSkipped: false,
    gateway,
    setup: input.signal ? { signal: input.signal } : {},
    keep: false,
  });
  try {
    // The container starts while the files are checked out, as a task's does.
    const preparation = workspace.prepare();
    const creating = preparation.mountable.then(() => sandboxes.create());
    const [prepared, created] = await Promise.allSettled([preparation.prepared, creating]);
    const sandboxId = created.status === 'fulfilled' ? created.value : null;
    try {
      if (prepared.status === 'rejected') throw prepared.reason;
      if (created.status === 'rejected') throw created.reason;
      await sandboxes.setUp(created.value);
      const facts = await workspace.observe(created.value);
      return await workspace.runDod(created.value, facts, {
        ...(input.signal ? { signal: input.signal } : {}),
        timeoutMs: config.limits.wallClock,
      });
    } finally {
      if (sandboxId) await sandboxes.stop(sandboxId).catch(() => undefined);
    }
  } finally {
    // Nothing of this check is the person's: the sandbox, the worktree and the branch all go.
    await workspace.settled();
    await removeTaskSandbox(repoRoot, taskId).catch(() => undefined);
    await tryGit(['worktree', 'remove', '--force', layout.worktreePath], { cwd: repoRoot });
    await tryGit(['branch', '-D', layout.branch], { cwd: repoRoot });
    await git(['worktree', 'prune'], { cwd: repoRoot }).catch(() => undefined);
  }
}
