/**
 * A fix-up task: when a subtask's merge leaves the combined tree red, a task from the integration branch's head
 * (any subtask's write scope, the Meta-agent instructing its worker) repairs it. Its gate passing is not
 * enough: it is reviewed like a subtask, the reviewer told first whose work it changed and what it deleted
 * (fixup-review.ts), and only then merged. Imports ports only.
 */
import type { Ledger } from '../core/ledger.js';
import type { Plan } from '../core/types.js';
import type { IntegrationPort, ProjectMetaPort, SubtaskResult, SubtaskRunnerPort } from './ports.js';
import type { CombinedCheck, PlannedSubtask, ProjectEvent, SubtaskTaskEvent } from './project-events.js';
import type { FixupReview, MergeLogEntry, SubtaskRecord } from './project-outcome.js';
import { fixupEvidence } from './fixup-review.js';
import { fixupPlan, fixupPrd } from './subtask-texts.js';

export interface FixupDeps {
  runner: SubtaskRunnerPort;
  integration: IntegrationPort;
  meta: ProjectMetaPort;
  ledger: Ledger;
  emit(event: ProjectEvent | SubtaskTaskEvent): void;
}

export interface FixupRequest {
  /** The project's n-th fix-up: `<ID>--fixup-<n>`. */
  number: number;
  projectTaskId: string;
  projectPrd: string;
  /** The subtask whose merge left the tree red. */
  record: SubtaskRecord;
  red: CombinedCheck;
  /** Where the fix-up may write: every subtask's write scope. */
  scope: string[];
  /** The merged subtasks (and `record`'s): whose work the review is told the fix-up changed. */
  merged: PlannedSubtask[];
  logMerge(entry: MergeLogEntry): void;
  /** The fix-up's review, for the note. */
  reviewed(review: FixupReview): void;
  signal?: AbortSignal;
}

/** Runs, reviews and merges one fix-up; true when it merged onto the integration branch. */
export async function runFixup(deps: FixupDeps, request: FixupRequest): Promise<boolean> {
  const { signal } = request;
  const taskId = `${request.projectTaskId}--fixup-${request.number}`;
  const id = request.record.subtask.id;
  const subtask = `fixup-${request.number}`;
  deps.emit({
    type: 'fixup',
    subtask: id,
    taskId,
    state: 'running',
    reason: `the combined check failed after merging ${id}`,
  });
  const prd = fixupPrd(id, request.red, request.projectPrd);
  const plan = fixupPlan(id);
  const base = await deps.integration.head();
  const failed = (reason: string, state = 'FAILED') => {
    deps.emit({ type: 'fixup', subtask: id, taskId, state, reason });
    return false;
  };
  let result: SubtaskResult;
  try {
    result = await deps.runner.run({
      taskId,
      subtask,
      prd,
      plan,
      base,
      writeScope: request.scope,
      readScope: [],
      limits: deps.ledger.remaining(),
      parent: deps.ledger,
      onEvent: (event) => deps.emit(event),
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    return failed((error as Error).message);
  }
  if (result.summary.state !== 'COMPLETE') return failed(result.summary.reason, result.summary.state);
  const branch = `agent-runner/${taskId}`;
  const verdict = await reviewFixup(deps, request, { taskId, subtask, prd, plan, base, result });
  if (verdict !== null) return failed(verdict.reason, verdict.state);
  deps.emit({ type: 'fixup', subtask: id, taskId, state: 'COMPLETE', reason: result.summary.reason });
  const merged = await deps.integration.merge(branch, `agent-runner: fix-up after merging ${id}`);
  request.logMerge({
    subtask,
    branch,
    status: merged.status,
    sha: merged.sha,
    ...(merged.status === 'conflict' ? { files: merged.files } : {}),
  });
  return merged.status === 'merged';
}

/** The fix-up's review: null when it said ok, else why it is not merged. */
async function reviewFixup(
  deps: FixupDeps,
  request: FixupRequest,
  run: { taskId: string; subtask: string; prd: string; plan: Plan; base: string; result: SubtaskResult },
): Promise<{ reason: string; state: string } | null> {
  const { taskId, subtask, result } = run;
  const branch = `agent-runner/${taskId}`;
  const planned: PlannedSubtask = {
    id: subtask,
    title: run.plan.title,
    prd: run.prd,
    plan: run.plan,
    writeScope: request.scope,
    readScope: [],
    blockedBy: [],
  };
  try {
    const evidence = fixupEvidence({
      fixupTaskId: taskId,
      summary: result.summary,
      changes: await deps.integration.changes(run.base, branch),
      diff: await deps.integration.diff(run.base, branch),
      subtasks: request.merged,
      dod: result.dod,
      workerSummary: result.workerSummary,
    });
    const signal = request.signal;
    const reviewed = await deps.meta.review({
      taskId,
      subtask: planned,
      evidence,
      ...(signal ? { signal } : {}),
    });
    deps.ledger.countMeta(reviewed.usage);
    deps.emit({ type: 'review', subtask, taskId, review: reviewed.review, usage: reviewed.usage });
    request.reviewed({ fixup: subtask, subtask: request.record.subtask.id, review: reviewed.review });
    if (reviewed.review.verdict === 'ng')
      return { reason: `the review said ng: ${reviewed.review.summary}`, state: 'REJECTED' };
    return null;
  } catch (error) {
    return { reason: `the review failed: ${(error as Error).message}`, state: 'FAILED' };
  }
}
