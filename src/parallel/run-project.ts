/**
 * The entry `run` and `resume` call: a PRD is planned once, then runs either as one task as always or as a
 * project of subtasks (`parallel.split: auto`). One lock on the task id is held from the start to the end,
 * whichever way it goes.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { lockTask } from '../compose/lock-task.js';
import type { TaskHost } from '../compose/task-host.js';
import type { GivenPlan, PlanHandedOff, TaskSpec } from '../compose/task-spec.js';
import { checkedMetaModel, openGateway } from '../compose/task-services.js';
import type { AcceptanceCriterion, TaskSummary } from '../core/types.js';
import type { Subtask } from '../protocol/decomposition.js';
import { Ledger } from '../core/ledger.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import { titleOf } from '../meta/meta-agent-port.js';
import { readNoteMemory } from '../notes/memory.js';
import type { MemoryEntry } from '../core/ports.js';
import { showControlsInJson } from '../notes/terminal-text.js';
import { taskLayout } from '../workspace/layout.js';
import { journalPath } from '../lifecycle/task-journal-state.js';
import type { ProjectHooks } from './drive-project.js';
import { createParallelMeta, type ParallelMeta } from './parallel-meta.js';
import type { PlannedSubtask, ProjectEvent, StampedProjectEvent } from './project-events.js';
import { PROJECT_JOURNAL, type ProjectResume } from './project-journal.js';
import { planOf } from './project-summary.js';
import { maySplit, type SplitOptions } from '../compose/may-split.js';

export type { ProjectHooks } from './drive-project.js';

export interface ProjectOptions extends SplitOptions {
  /** `resume <ID>` of a project: continue its graph from the project journal (no new plan). */
  project?: ProjectResume;
}

/** Runs a PRD: planned, then either one task as always or a project of subtasks. */
export async function runProject(
  host: TaskHost,
  spec: TaskSpec,
  hooks: ProjectHooks = {},
  options: ProjectOptions = {},
): Promise<TaskSummary> {
  const lock = await lockTask(spec, hooks, spec.start.kind === 'resume' ? 'resume' : 'run');
  try {
    if (!options.project && !maySplit(spec, options)) {
      const { runLockedTask } = await import('../compose/run-task.js');
      return (await runLockedTask(host, spec, taskHooks(hooks))).summary;
    }
    return await planAndRun(host, spec, hooks, options.project);
  } finally {
    lock.release();
  }
}

/** A task's hooks from a project's: the events a single task emits are project events too. */
function taskHooks(hooks: ProjectHooks) {
  return { ...hooks, onEvent: hooks.onEvent as ((event: StampedProjectEvent) => void) | undefined };
}

/** The project's journal writer: its own events and when each subtask and worker run started and ended. */
function projectEmitter(host: TaskHost, spec: TaskSpec, hooks: ProjectHooks) {
  const runDir = taskLayout(spec.repoRoot, spec.taskId).runDir;
  const journalFile = path.join(runDir, PROJECT_JOURNAL);
  return (event: ProjectEvent | StampedProjectEvent) => {
    const stamped = ('at' in event ? event : { ...event, at: host.stamp() }) as StampedProjectEvent;
    hooks.onEvent?.(stamped);
    // A subtask's events live in its own journal; the project's journal keeps the project's events and when
    // each subtask and each worker run started and ended (enough to see what ran at once).
    if (PROJECT_EVENT_TYPES.has(stamped.type) || JOURNALLED_TASK_EVENTS.has(stamped.type)) {
      mkdirSync(runDir, { recursive: true });
      const line = showControlsInJson(host.redaction.redactJsonText(JSON.stringify(stamped)));
      appendFileSync(journalFile, `${line}\n`);
    }
  };
}

/** The longest the task's preparation waits for the planner's request to leave before it starts anyway. */
const PLAN_HEAD_START_MS = 300;

async function planAndRun(
  host: TaskHost,
  spec: TaskSpec,
  hooks: ProjectHooks,
  resume: ProjectResume | undefined,
): Promise<TaskSummary> {
  host.protect(spec.config, spec.env);
  const emit = projectEmitter(host, spec, hooks);
  const layout = taskLayout(spec.repoRoot, spec.taskId);
  // The project's ledger: its own Meta-agent calls (plan, reviews, re-plans) and every subtask's spending.
  const ledger = new Ledger(spec.config.limits, host.clock, {
    ...(resume ? { earlier: { metaCalls: resume.spent.metaCalls, meta: resume.spent.usage } } : {}),
  });
  const memory = resume ? Promise.resolve([]) : earlierNotes(spec);
  let planLeft = () => {};
  const planSent = new Promise<void>((resolve) => (planLeft = resolve));
  setTimeout(planLeft, PLAN_HEAD_START_MS).unref();
  const gateway: TaskGateway = await openGateway(
    host,
    { config: spec.config, env: spec.env, repoRoot: spec.repoRoot, runDir: layout.runDir },
    {
      ledger,
      onSent: (kind) => {
        if (kind === 'meta') planLeft();
      },
    },
  );
  let closed = false;
  const closeGateway = async () => {
    if (!closed) await gateway.close();
    closed = true;
  };
  try {
    const meta = createParallelMeta({
      model: checkedMetaModel(host, spec.config, spec.env, gateway),
      config: spec.config,
      logDir: path.join(layout.runDir, 'meta'),
      redact: host.redaction.redact,
    });
    const drive = { host, spec, hooks, meta, gateway, emit };
    if (resume)
      return await (
        await import('./drive-project.js')
      ).driveProject({ ...drive, subtasks: resume.subtasks, ledger, resume });
    const planning = planProject(meta, spec, memory, hooks.signal);
    // The task is prepared while the planner answers: a PRD that stays one task starts as fast as with
    // `parallel.split: never`. One task: the project's gateway is not needed any more (the task has its own).
    const plan: Promise<GivenPlan | PlanHandedOff> = planning.then(async (planned) => {
      if (planned.kind === 'subtasks') return { handedOff: true };
      await closeGateway();
      if (planned.kind === 'failed') throw planned.error;
      announcePlan(planned, emit, hooks);
      return planned.plan;
    });
    plan.catch(() => undefined);
    await Promise.race([planSent, planning]);
    // Imported once the plan request has left: the task's composition (workspace, sandbox, runner, notes) is
    // most of the runner's modules, and loading them holds the one JS thread the request needs.
    const { withComposedTask } = await import('../compose/run-task.js');
    const task = await withComposedTask(
      host,
      { ...spec, start: { kind: 'planned', plan } },
      taskHooks(hooks),
      (composed) => composed.runOrHandOff(),
    );
    if (!('handedOff' in task)) return task.summary;
    const planned = await planning;
    if (planned.kind !== 'subtasks') throw new Error('a task was handed off without subtasks');
    // The prepared task never ran (its sandbox repository is gone): its branch and worktree, at the same
    // base, become the integration branch's, and the record is the project's journal, not a task's.
    await rm(journalPath(layout.runDir), { force: true });
    emit({ type: 'project_plan', usage: planned.usage, split: true });
    // Imported here: the orchestrator, merges and the combined DoD are not needed before the plan.
    const { driveProject } = await import('./drive-project.js');
    ledger.countMeta(planned.usage);
    return await driveProject({ ...drive, subtasks: planned.subtasks, ledger });
  } finally {
    await closeGateway();
  }
}

/** Earlier tasks' notes, read (git lists what it tracks) while the gateway starts and the prompts load. */
function earlierNotes(spec: TaskSpec): Promise<MemoryEntry[]> {
  const memory = readNoteMemory(taskLayout(spec.repoRoot, spec.taskId).stateDir, spec.taskId);
  // Awaited by the planning, which reports a failure; meanwhile it is no unhandled rejection.
  memory.catch(() => undefined);
  return memory;
}

/** The plan of one task in the journal, and a notice when the planner's subtasks run as one task. */
function announcePlan(
  planned: Extract<ProjectPlan, { kind: 'task' }>,
  emit: (event: ProjectEvent) => void,
  hooks: ProjectHooks,
): void {
  if (planned.asOneTask)
    hooks.onNotice?.(
      `the planner split the PRD into ${planned.asOneTask.subtasks} subtasks, but answered in ${planned.asOneTask.planMs} ms: ` +
        'with a model this fast parallel work has nothing to hide, so they run as one task with all their criteria ' +
        '(parallel.split: always runs them as subtasks anyway)',
    );
  emit({
    type: 'project_plan',
    usage: planned.plan.usage,
    split: false,
    ...(planned.asOneTask ? { asOneTask: planned.asOneTask } : {}),
  });
}

type ProjectPlan =
  | { kind: 'task'; plan: GivenPlan; asOneTask?: { subtasks: number; planMs: number } }
  | { kind: 'subtasks'; subtasks: PlannedSubtask[]; usage: GivenPlan['usage'] }
  | { kind: 'failed'; error: unknown };

/** The planner's answer: one task's criteria, or subtasks. */
async function planProject(
  meta: ParallelMeta,
  spec: TaskSpec,
  memory: Promise<MemoryEntry[]>,
  signal?: AbortSignal,
): Promise<ProjectPlan> {
  const startedAt = Date.now();
  try {
    const answer = await meta.plan({
      taskId: spec.taskId,
      prd: spec.prd,
      memory: (await memory).map(({ title, summary }) => ({
        title,
        summary,
      })),
      allowSubtasks: true,
      ...(signal ? { signal } : {}),
    });
    const payload = answer.message.payload;
    if (!('subtasks' in payload)) {
      const plan = planOf(titleOf(spec.prd, spec.taskId), payload.acceptance_criteria);
      return { kind: 'task', plan: { plan, usage: answer.usage, metaCalls: 1 } };
    }
    const planMs = Date.now() - startedAt;
    if (spec.config.parallel.split === 'auto' && !splitPays(planMs)) {
      const plan = planOf(titleOf(spec.prd, spec.taskId), criteriaOfAll(payload.subtasks));
      return {
        kind: 'task',
        plan: { plan, usage: answer.usage, metaCalls: 1 },
        asOneTask: { subtasks: payload.subtasks.length, planMs },
      };
    }
    const subtasks = payload.subtasks.map((subtask) => ({
      id: subtask.id,
      title: subtask.title,
      prd: subtask.prd,
      plan: planOf(subtask.title, subtask.acceptance_criteria),
      writeScope: subtask.write_scope,
      readScope: subtask.read_scope,
      blockedBy: subtask.blocked_by,
    }));
    return { kind: 'subtasks', subtasks, usage: answer.usage };
  } catch (error) {
    return { kind: 'failed', error };
  }
}

/**
 * A split pays when the model's calls take longer than what each subtask adds (its own sandbox, set-up and
 * checks, a review, a merge and a combined check: about a second or more each on a 2-core machine). The planning
 * call is the one measure there is before deciding: under a second, the subtasks run as one task
 * (`npm run bench:parallel` measures both sides).
 */
export const SPLIT_PAYS_MS = 1000;

export function splitPays(planMs: number): boolean {
  return planMs >= SPLIT_PAYS_MS;
}

/** Every subtask's criteria as one task's: ids prefixed with the subtask's (`api.AC-1`), titles in front. */
function criteriaOfAll(subtasks: readonly Subtask[]): AcceptanceCriterion[] {
  return subtasks.flatMap((subtask) =>
    subtask.acceptance_criteria.map((criterion, index) => {
      const id = `${subtask.id}.${criterion.id}`;
      return {
        ...criterion,
        id: id.length <= 64 ? id : `${subtask.id}.${index + 1}`,
        description: `${subtask.title}: ${criterion.description}`,
      };
    }),
  );
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
  'project_note_written',
  'project_finished',
]);
