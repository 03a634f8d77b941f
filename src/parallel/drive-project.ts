/**
 * Driving a project's subtasks with the real pieces: each subtask is a whole task through `runTask` (its own
 * branch `agent-runner/<ID>--<SUB>`, sandbox, gateway token, worker runs, facts, DoD, note) with its write
 * scope as `scope.write`; the integration branch lives in a host worktree; the combined checks run in the
 * project's integration sandbox (or one per check under `parallel.checkSandbox: fresh`); the project's own Meta-agent calls (reviews, re-plans) go through its gateway.
 */
import type { SandboxRuntimeChoice } from '../core/records.js';
import { startDockerSide } from '../compose/docker-side.js';
import { runTask } from '../compose/run-task.js';
import type { TaskHost } from '../compose/task-host.js';
import type { TaskHooks, TaskSpec } from '../compose/task-spec.js';
import type { Ledger } from '../core/ledger.js';
import type { SandboxRuntime } from '../core/ports.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import { previousAttempt } from '../lifecycle/journal-resume.js';
import { readTaskJournal } from '../lifecycle/task-journal-state.js';
import { taskLayout } from '../workspace/layout.js';
import { resolveCommit } from '../workspace/git/tree-entries.js';
import { combinedCheck } from './combined-sandbox.js';
import { GitIntegrationBranch, type IntegrationBranchOptions } from './integration-branch.js';
import { IntegrationSandbox } from './integration-sandbox.js';
import { ProjectOrchestrator } from './orchestrator.js';
import type { ProjectOutcome } from './project-outcome.js';
import type { ParallelMeta } from './parallel-meta.js';
import type { ProjectMetaPort, SubtaskRunnerPort } from './ports.js';
import type { PlannedSubtask, ProjectEvent, StampedProjectEvent } from './project-events.js';
import type { ProjectResume } from './project-journal.js';
import { planOf, projectSummary } from './project-summary.js';
import { parallelMax } from './parallel-max.js';
import { writeProjectNote } from './project-note.js';
import { titleOf } from '../meta/meta-agent-port.js';
import type { DodOutcome, TaskSummary } from '../core/types.js';
import { ZERO_USAGE } from '../core/usage.js';

/**
 * How long an idle merge train waits at most for the reviews under way before it leaves: subtasks whose reviews
 * come back about together (their model calls started together) then share one combined check instead of one
 * each. With no review under way it leaves at once.
 */
const TRAIN_GATHER_MS = 1500;

/** How a project reports: its own events, and each subtask's events tagged with the subtask. */
export type ProjectHooks = Omit<TaskHooks, 'onEvent'> & { onEvent?: (event: StampedProjectEvent) => void };

export interface DriveProjectInput {
  host: TaskHost;
  spec: TaskSpec;
  hooks: ProjectHooks;
  subtasks: PlannedSubtask[];
  meta: ParallelMeta;
  gateway: TaskGateway;
  emit: (event: ProjectEvent | StampedProjectEvent) => void;
  /** The project's ledger (its gateway's budget too): the planning call and earlier attempts are in it. */
  ledger: Ledger;
  resume?: ProjectResume;
}

export async function driveProject(input: DriveProjectInput): Promise<TaskSummary> {
  const { host, spec, hooks, subtasks, emit } = input;
  const { config, repoRoot, taskId } = spec;
  const startedAt = host.clock.now();
  const baseSha = input.resume?.baseSha ?? (await resolveCommit(repoRoot, spec.base ?? 'HEAD'));
  if (baseSha === null) throw new Error(`--base ${spec.base ?? 'HEAD'} does not name a commit`);
  const engine = await host.docker();
  // The combined DoD's sandboxes run the image a task of this repository runs (its toolchain included).
  const { image, setup, containerRuntime } = await startDockerSide(
    engine.docker,
    engine.runtime,
    spec,
    hooks.onNotice,
  );
  const { sandbox, runCheck } = combinedChecks(input, engine.runtime, image, setup, containerRuntime);
  const integration = await GitIntegrationBranch.open({ repoRoot, taskId, baseSha, runCheck });
  const max = parallelMax(config);
  emit({
    type: 'project_started',
    taskId,
    branch: integration.branch,
    baseSha,
    max,
    subtasks,
    prd: spec.prd,
    prdPath: spec.prdPath,
    ...(config.deliver.forge !== 'auto' ? { forge: config.deliver.forge } : {}),
  });
  const orchestrator = new ProjectOrchestrator(
    {
      taskId,
      prd: spec.prd,
      subtasks,
      max,
      maxReplans: 1,
      maxFixups: 1,
      gatherMs: TRAIN_GATHER_MS,
      ...(input.resume ? { merged: input.resume.merged, attempts: input.resume.attempts } : {}),
    },
    {
      runner: subtaskRunner(input),
      integration,
      meta: projectMeta(input.meta),
      clock: host.clock,
      ledger: input.ledger,
      emit,
    },
  );
  let outcome: ProjectOutcome;
  try {
    sandbox?.start(await integration.head(), hooks.signal);
    outcome = await orchestrator.run(hooks.signal);
  } catch (error) {
    emit({ type: 'subtask_waiting', subtask: '*', kind: 'error', reason: (error as Error).message });
    throw error;
  } finally {
    await sandbox?.dispose();
  }
  const summary = await recordProject(input, { integration, baseSha, max, startedAt, outcome });
  emit({ type: 'project_finished', summary });
  return summary;
}

/**
 * How the project's combined checks run: in its integration sandbox (made when the project starts, when some
 * check will run), or in a fresh sandbox each under `parallel.checkSandbox: fresh`; recorded as skipped when
 * nothing would run.
 */
function combinedChecks(
  input: DriveProjectInput,
  runtime: SandboxRuntime,
  image: string,
  setup: string[],
  containerRuntime: SandboxRuntimeChoice,
): { sandbox: IntegrationSandbox | null; runCheck: IntegrationBranchOptions['runCheck'] } {
  const { spec, subtasks, gateway } = input;
  const { config, repoRoot, taskId } = spec;
  const dodSkipped = spec.dodSkipped || config.dod.skip;
  const willCheck =
    !dodSkipped || subtasks.some((subtask) => subtask.plan.acceptanceCriteria.some((c) => c.check));
  const sandbox =
    config.parallel.checkSandbox === 'reuse' && willCheck
      ? new IntegrationSandbox({
          config,
          repoRoot,
          projectId: taskId,
          runtime,
          gateway,
          image,
          setup,
          dodSkipped,
          containerRuntime,
        })
      : null;
  let checks = 0;
  const runCheck: IntegrationBranchOptions['runCheck'] = async (headSha, label, criteria, signal) => {
    const checked = criteria.some((group) => group.criteria.some((criterion) => criterion.check));
    if (dodSkipped && !checked) {
      const dod: DodOutcome = { status: 'skipped', results: [], ranOnDirtyTree: false, source: 'skipped' };
      return { subtask: label, headSha, dod, criteria: [] };
    }
    if (sandbox) return sandbox.check(headSha, label, criteria, signal);
    checks += 1;
    return combinedCheck({
      config,
      repoRoot,
      runtime,
      gateway,
      image,
      setup,
      taskId: `${taskId}--check-${checks}`,
      headSha,
      label,
      criteria,
      dodSkipped,
      ...(signal ? { signal } : {}),
      containerRuntime,
    });
  };
  return { sandbox, runCheck };
}

/** The project's note and summary, once its outcome is known. */
async function recordProject(
  input: DriveProjectInput,
  done: {
    integration: GitIntegrationBranch;
    baseSha: string;
    max: number;
    startedAt: number;
    outcome: ProjectOutcome;
  },
): Promise<TaskSummary> {
  const { host, spec, hooks } = input;
  const { integration, outcome } = done;
  const finishedAt = host.clock.now();
  const note = await writeProjectNote(
    {
      taskId: spec.taskId,
      title: titleOf(spec.prd, spec.taskId),
      prd: spec.prd,
      prdPath: spec.prdPath,
      repoRoot: spec.repoRoot,
      branch: integration.branch,
      baseSha: done.baseSha,
      worktreePath: integration.worktreePath,
      max: done.max,
      startedAt: done.startedAt,
      finishedAt,
      outcome,
      redact: host.redaction.redact,
    },
    taskLayout(spec.repoRoot, spec.taskId).stateDir,
  );
  input.emit({ type: 'project_note_written', ...note });
  return projectSummary({
    taskId: spec.taskId,
    title: titleOf(spec.prd, spec.taskId),
    outcome,
    integration,
    notePath: note.path,
    durationMs: finishedAt - done.startedAt,
    interrupted: Boolean(hooks.signal?.aborted),
  });
}

/** Each subtask is a whole task: `runTask` on the subtask's id, base, scope and what is left of the budget. */
function subtaskRunner(input: DriveProjectInput): SubtaskRunnerPort {
  const { host, spec, hooks } = input;
  return {
    async run(run) {
      // A subtask begun by an earlier attempt of the project continues from its own journal.
      const journal = readTaskJournal(taskLayout(spec.repoRoot, run.taskId).runDir, run.taskId);
      const previous = journal ? previousAttempt(journal) : null;
      const { config } = spec;
      const subtaskSpec: TaskSpec = {
        ...spec,
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
          // What is left of the project's limits.
          limits: { ...config.limits, ...run.limits },
        },
        start: previous
          ? { kind: 'resume', previous, attempt: (journal?.attempts ?? 0) + 1 }
          : { kind: 'planned', plan: Promise.resolve({ plan: run.plan, usage: ZERO_USAGE, metaCalls: 0 }) },
        parent: run.parent,
      };
      return runTask(host, subtaskSpec, {
        ...hooks,
        signal: run.signal,
        onEvent: (event) => run.onEvent({ ...event, subtask: run.subtask }),
      });
    },
  };
}

/** The project's own Meta-agent calls: reviews and re-plans. */
function projectMeta(meta: ParallelMeta): ProjectMetaPort {
  return {
    async review({ taskId, subtask, evidence, signal }) {
      const result = await meta.review({
        taskId,
        prd: subtask.prd,
        acceptanceCriteria: subtask.plan.acceptanceCriteria,
        evidence,
        ...(signal ? { signal } : {}),
      });
      const { verdict, summary, findings } = result.message.payload;
      return { review: { verdict, summary, findings }, usage: result.usage };
    },
    async replan({ taskId, subtask, findings, reason, signal }) {
      const prd = [
        subtask.prd.trimEnd(),
        '',
        `The last attempt of this subtask was not merged: ${reason}`,
        ...findings.map(
          (finding) =>
            `- ${finding.file}${finding.line ? `:${finding.line}` : ''} (${finding.severity}): ${finding.message}`,
        ),
      ].join('\n');
      const result = await meta.plan({ taskId, prd, allowSubtasks: false, ...(signal ? { signal } : {}) });
      const payload = result.message.payload;
      const criteria = 'acceptance_criteria' in payload ? payload.acceptance_criteria : [];
      return { plan: planOf(subtask.title, criteria), usage: result.usage };
    },
  };
}
