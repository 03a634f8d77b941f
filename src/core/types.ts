/**
 * The core's domain types: what the loop knows about a task. Adapters map their own shapes to these.
 */
import type { TaskState } from './task-state.js';
import type { TokenUsage, WorkerCommand, WorkerMode } from './ports.js';

export interface AcceptanceCriterion {
  id: string;
  description: string;
  type: string;
  critical: boolean;
  check?: { kind: string; file?: string; testName?: string; command?: string };
}

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
  assessment?: Assessment;
  /** Why the completion gate refused, fed back to the Meta-agent. */
  refusals: string[];
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
}
