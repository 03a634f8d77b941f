/**
 * The core's domain types: what the loop knows about a task. Adapters map their own shapes to these.
 */
import type { AcceptanceCriterion } from '../protocol/messages.js';
import type { TaskState } from './task-state.js';
import type { TokenUsage, WorkerCommand, WorkerMode } from './ports.js';

// One type per concept: the acceptance criterion (and its check) is the protocol's zod schema, used as is
// by the loop, the prompts, the worker prompt and the note. No hand mapping, so no field gets lost.
export type { AcceptanceCriterion, CriterionCheck } from '../protocol/messages.js';

export interface Plan {
  title: string;
  acceptanceCriteria: AcceptanceCriterion[];
}

export type MetaActionKind = 'run_worker' | 'mark_complete' | 'ask_human' | 'abort';

export interface MetaDecision {
  action: MetaActionKind;
  reason: string;
  usedPatterns: string[];
  workerCall?: { workerType: string; mode: WorkerMode; prompt: string };
  question?: string;
}

export type CriterionStatus = 'passed' | 'failed' | 'unknown';

export interface Assessment {
  allCriteriaSatisfied: boolean;
  summary: string;
  byCriterion: { id: string; status: CriterionStatus; comment: string }[];
  retrospective: string[];
}

/** Tokens and money of one model call or one worker run. */
export interface Usage extends TokenUsage {
  costUsd: number;
}

export type DodCheckStatus = 'passed' | 'failed' | 'timeout' | 'skipped';

export interface DodCheckResult {
  name: string;
  command: string;
  status: DodCheckStatus;
  exitCode: number | null;
  durationMs: number;
  outputTail: string;
}

export interface DodOutcome {
  /** `none`: nothing configured and nothing detected. */
  status: 'passed' | 'failed' | 'skipped' | 'none';
  results: DodCheckResult[];
  ranOnDirtyTree: boolean;
  /** Where the checks came from: `config`, or what detection looked at (`package.json`, `go.mod`...). */
  source: string;
}

/**
 * The result of one acceptance criterion's check. `passed`, `failed` and `timeout` were executed (or, for
 * `file_exists`, observed on the task branch); `not_executable` says why it could not run here;
 * `not_executed` is a kind agent-runner does not run (`manual`, `playwright`...), kept for the assessor.
 */
export type CriterionCheckStatus = 'passed' | 'failed' | 'timeout' | 'not_executable' | 'not_executed';

export interface CriterionCheckResult {
  criterionId: string;
  critical: boolean;
  /** The check's kind as the plan wrote it. */
  kind: string;
  /** What ran or was looked at: the command, `file README.md`, the named test. */
  target: string;
  status: CriterionCheckStatus;
  exitCode: number | null;
  durationMs: number;
  outputTail: string;
  /** In words: why it failed, was not executable or not executed. */
  reason: string;
  /** The sandbox had uncommitted changes when it ran: not evidence about the committed work. */
  ranOnDirtyTree: boolean;
}

/** Statuses of a check that was really executed or observed (evidence either way). */
export const EXECUTED_CHECK_STATUSES: readonly CriterionCheckStatus[] = ['passed', 'failed', 'timeout'];

/** What the runner observed itself after a run. */
export interface TaskFacts {
  baseSha: string;
  headSha: string;
  commits: { sha: string; subject: string }[];
  dirty: boolean;
  /** `git status --porcelain` lines when dirty. */
  uncommitted: string[];
  changedFiles: string[];
  diffStat: string;
  /** The diff since base, cut to a bounded size for the assessment. */
  diff: string;
  scopeViolations: string[];
  /** Set when the worker's commits could not be fast-forwarded into the person's worktree. */
  pendingRef?: string;
}

/** One worker run and what followed it. */
export interface RunRecord {
  index: number;
  decision: MetaDecision;
  startedAt: number;
  durationMs: number;
  mode: WorkerMode;
  exitCode: number;
  timedOut: boolean;
  failed: boolean;
  threadId: string | null;
  commands: WorkerCommand[];
  finalMessage: string | null;
  errors: string[];
  usage: Usage;
  facts?: TaskFacts;
  dod?: DodOutcome;
  /** The acceptance criteria's checks, run with the DoD on the same tree. */
  criteriaChecks?: CriterionCheckResult[];
  assessment?: Assessment;
  /** The evidence fingerprint the assessment judged; a new assessment is asked only when it changes. */
  assessedEvidence?: string;
  /** Why the completion gate refused, fed back to the Meta-agent. */
  refusals: string[];
}

/** One acceptance criterion with everything known about it: the plan, the assessment, its check's result. */
export interface CriterionEvidence {
  id: string;
  description: string;
  type: string;
  critical: boolean;
  check: AcceptanceCriterion['check'] | null;
  /** The latest assessment's verdict (`not assessed` when there was none). */
  status: CriterionStatus | 'not assessed';
  comment: string;
  /** The latest result of its check (null: no check planned, or no validation ran). */
  checkResult: CriterionCheckResult | null;
}

export interface TaskSummary {
  taskId: string;
  title: string;
  state: TaskState;
  reason: string;
  branch: string;
  headSha: string | null;
  notePath: string | null;
  worktreePath: string | null;
  runs: number;
  metaCalls: number;
  usage: { meta: Usage; worker: Usage; total: Usage };
  durationMs: number;
  exitCode: number;
  /** Set when the task ended on an error (model unreachable, Docker gone...). */
  error: { code: string; message: string } | null;
  /** What the decision rests on (assessment, facts, DoD, criteria checks, executable evidence). */
  basis: string[];
  criteria: CriterionEvidence[];
}
