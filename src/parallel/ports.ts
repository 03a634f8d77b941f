/**
 * What the orchestrator of parallel work needs from the outside, as ports: a way to run one subtask as a whole
 * task of today, the integration branch with its merge queue and combined DoD, and the Meta-agent as reviewer
 * and planner. The composition (run-project.ts) wires the real ones; unit tests wire honest fakes.
 */
import type { FactsForAssessment } from '../meta/meta-context.js';
import type { SpendingLimits } from '../core/limits.js';
import type { Ledger } from '../core/ledger.js';
import type { AcceptanceCriterion, DodOutcome, Plan, TaskSummary, Usage } from '../core/types.js';
import type { ReviewFinding } from '../protocol/review.js';
import type { CombinedCheck, PlannedSubtask, ReviewVerdict, SubtaskTaskEvent } from './project-events.js';

export interface SubtaskRunRequest {
  /** `<ID>--<SUB>` (a later attempt: `<ID>--<SUB>-r<N>`); its branch is `agent-runner/<taskId>`. */
  taskId: string;
  subtask: string;
  prd: string;
  plan: Plan;
  /** The commit the subtask's branch starts from: the integration branch's head when it starts. */
  base: string;
  writeScope: string[];
  readScope: string[];
  /** What is left of the project's budgets when it starts. */
  limits: SpendingLimits;
  /** The project's ledger: the subtask spends from it as it goes, and stops once it is spent. */
  parent: Ledger;
  onEvent(event: SubtaskTaskEvent): void;
  signal?: AbortSignal;
}

/** What a finished subtask run leaves for the review. */
export interface SubtaskResult {
  summary: TaskSummary;
  /** The DoD of its last observed run, when there was one. */
  dod?: DodOutcome;
  workerSummary?: string;
}

/** Runs one subtask as a whole task (branch, sandbox, gateway token, worker runs, facts, DoD, note). */
export interface SubtaskRunnerPort {
  run(request: SubtaskRunRequest): Promise<SubtaskResult>;
}

export type MergeResult =
  { status: 'merged'; sha: string } | { status: 'conflict'; files: string[]; sha: string };

/** A merged subtask's acceptance criteria, to check again on the combined tree. */
export interface SubtaskCriteria {
  subtask: string;
  criteria: readonly AcceptanceCriterion[];
}

/** One path a branch changed against the commit it started from (`git diff --name-status`). */
export interface FileChange {
  /** `A`dded, `M`odified, `D`eleted, `R`enamed (from `from`), `T`ype changed... */
  status: string;
  path: string;
  from?: string;
}

/** The integration branch `agent-runner/<ID>` in a host worktree of its own (never the person's checkout). */
export interface IntegrationPort {
  readonly branch: string;
  head(): Promise<string>;
  /** Files of the base tree, for the scheduler's overlap check. */
  baseFiles(): Promise<string[]>;
  /** `git merge --no-ff` of a subtask's branch; a conflict is aborted and reported. */
  merge(branch: string, message: string): Promise<MergeResult>;
  /** Moves the integration branch back to `sha` (a merge whose combined DoD could not be repaired). */
  resetTo(sha: string): Promise<void>;
  /** The diff of a branch against the commit it started from, deletions first (bounded). */
  diff(base: string, branch: string): Promise<string>;
  /** The paths a branch changed against the commit it started from. */
  changes(base: string, branch: string): Promise<FileChange[]>;
  /**
   * The combined check on the integration branch's current tree, in a sandbox: the DoD, then the given
   * subtasks' criteria checks on the same tree.
   */
  combinedCheck(
    label: string,
    criteria: readonly SubtaskCriteria[],
    signal?: AbortSignal,
  ): Promise<CombinedCheck>;
}

/** The Meta-agent as reviewer and as planner of one subtask again. */
export interface ProjectMetaPort {
  review(input: {
    taskId: string;
    subtask: PlannedSubtask;
    evidence: FactsForAssessment;
    signal?: AbortSignal;
  }): Promise<{ review: ReviewVerdict; usage: Usage }>;
  /** New acceptance criteria for one subtask, given why its last attempt was not merged. */
  replan(input: {
    taskId: string;
    subtask: PlannedSubtask;
    findings: ReviewFinding[];
    reason: string;
    signal?: AbortSignal;
  }): Promise<{ plan: Plan; usage: Usage }>;
}
