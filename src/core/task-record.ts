/**
 * What a finished task leaves: the record its note is written from and the summary its caller gets, built
 * from the loop's state by pure functions.
 */
import type { AssessmentEvidence, PreparedTask } from './ports.js';
import type { DiskCapKinds, SandboxRuntimeChoice } from './records.js';
import type { TaskState } from './task-state.js';
import type {
  Assessment,
  CriterionEvidence,
  Plan,
  RootCause,
  Baseline,
  FollowupSummary,
  RunRecord,
  TaskSummary,
  Usage,
} from './types.js';

/** Everything the note is written from. */
export interface TaskRecord {
  taskId: string;
  prd: string;
  state: TaskState;
  reason: string;
  plan: Plan | null;
  task: PreparedTask | null;
  runs: RunRecord[];
  metaCalls: number;
  usage: { meta: Usage; worker: Usage; total: Usage };
  startedAt: number;
  finishedAt: number;
  question: string | null;
  preservedRef: string | null;
  workerType: string;
  runDir: string;
  error: { code: string; message: string } | null;
  /** What the final decision rests on, in a few lines. */
  basis: string[];
  /** Every acceptance criterion with its assessment and its check's latest result. */
  criteria: CriterionEvidence[];
  /** The failing check a task that did not complete stopped on (absent: complete, or no check failed). */
  rootCause?: RootCause | null;
  /** The DoD on the base before any change (src/core/baseline.ts), when it ran. */
  baseline?: Baseline | null;
  /** Which kind each disk cap of the sandbox was (absent: no sandbox was made). */
  diskCaps?: DiskCapKinds | null;
  /** The runtime the sandbox ran under and why (absent: no sandbox was made). */
  sandboxRuntime?: SandboxRuntimeChoice | null;
  /** The follow-up this attempt belongs to: its instruction, the criteria before, the merge, earlier spending. */
  followup?: FollowupSummary;
}

/** The latest evidence the runs hold (a task that ended before validating in this attempt). */
export function lastRecordedEvidence(runs: readonly RunRecord[]): AssessmentEvidence | null {
  const run = [...runs].reverse().find((item) => item.facts);
  if (!run?.facts) return null;
  return {
    run,
    facts: run.facts,
    dod: run.dod,
    criteriaChecks: run.criteriaChecks ?? [],
    checkedHead: run.checkedHead ?? null,
  };
}

/** The last assessment the runs hold, else one made before any run of this attempt. */
export function lastAssessment(
  runs: readonly RunRecord[],
  loose: Assessment | undefined,
): Assessment | undefined {
  return [...runs].reverse().find((run) => run.assessment)?.assessment ?? loose;
}

/** Every criterion with its assessment verdict and its check's latest result. */
export function criteriaEvidence(
  plan: Plan | null,
  latest: AssessmentEvidence | null,
  assessment: Assessment | undefined,
): CriterionEvidence[] {
  return (plan?.acceptanceCriteria ?? []).map((criterion) => {
    const verdict = assessment?.byCriterion.find((item) => item.id === criterion.id);
    return {
      id: criterion.id,
      description: criterion.description,
      type: criterion.type,
      critical: criterion.critical,
      check: criterion.check ?? null,
      status: verdict?.status ?? 'not assessed',
      comment: verdict?.comment ?? '',
      checkResult: latest?.criteriaChecks.find((check) => check.criterionId === criterion.id) ?? null,
    };
  });
}

/** The caller's summary of a recorded task. */
export function summaryOf(
  record: TaskRecord,
  outcome: { notePath: string | null; exitCode: number; headSha: string | null },
): TaskSummary {
  return {
    taskId: record.taskId,
    title: record.plan?.title ?? record.taskId,
    state: record.state,
    reason: record.reason,
    branch: record.task?.branch ?? `agent-runner/${record.taskId}`,
    headSha: outcome.headSha ?? record.task?.baseSha ?? null,
    notePath: outcome.notePath,
    worktreePath: record.task?.worktreePath ?? null,
    runs: record.runs.length,
    metaCalls: record.metaCalls,
    usage: record.usage,
    durationMs: record.finishedAt - record.startedAt,
    exitCode: outcome.exitCode,
    error: record.error,
    basis: record.basis,
    criteria: record.criteria,
    rootCause: record.rootCause ?? null,
    diskCaps: record.diskCaps ?? null,
    sandboxRuntime: record.sandboxRuntime ?? null,
    ...(record.followup ? { followup: record.followup } : {}),
  };
}
