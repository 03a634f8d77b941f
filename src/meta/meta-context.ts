/**
 * What the loop hands the Meta-agent. Simple fields only, owned by the Meta-agent: the core adapts its
 * own state to these shapes, so neither side depends on the other's internals.
 */
import type { MemoryEntry as CoreMemoryEntry } from '../core/ports.js';
import type { CriterionCheckResult, CriterionEvidence, DodCheckResult } from '../core/types.js';
import type { AcceptanceCriterion } from '../protocol/messages.js';

/** A pattern of the Command Pattern Library, as offered to the model. */
export interface PatternInfo {
  name: string;
  description: string;
}

/** The summary of an earlier task note, offered as memory (its path is not shown to the model). */
export type MemoryEntry = Pick<CoreMemoryEntry, 'title' | 'summary'>;

/** A command the worker ran, with its result. */
export interface CommandRecord {
  command: string;
  exitCode: number | null;
}

/**
 * One earlier iteration as the prompt shows it (a rendering of the core's RunRecord, made in one place:
 * MetaAgentPortAdapter), bounded and simplified so older entries can shrink to one line.
 */
export interface HistoryEntry {
  iteration: number;
  action: string;
  reason: string;
  usedPatterns?: string[];
  workerType?: string;
  mode?: 'exec' | 'resume';
  prompt?: string;
  /** The worker's final message, or a summary of it. */
  workerSummary?: string;
  exitCode?: number | null;
  timedOut?: boolean;
  durationMs?: number;
  commands?: CommandRecord[];
  /** The last lines of the worker's output. Dropped first when the prompt is over budget. */
  outputTail?: string;
  /** What the assessment after this run concluded, when there was one. */
  assessmentSummary?: string;
  allCriteriaSatisfied?: boolean;
}

/** Observable facts gathered after a worker run, for the completion assessment. */
export interface FactsForAssessment {
  /** One paragraph: exit code, commits on the task branch, dirty tree, scope violations... */
  summary: string;
  /** The Definition-of-Done checks (the core's own result type). */
  dodResults: DodCheckResult[];
  /** Where the DoD checks came from, or why there are none. */
  dodSource?: string;
  /** The acceptance criteria's checks and their results, as the runner ran them. */
  criteriaChecks?: CriterionCheckResult[];
  /** The diff of the task branch, already bounded by the caller; cut further when over budget. */
  diff: string;
  workerSummary?: string;
}

/**
 * A follow-up of an ended task: the person's instruction (quoted to the model as input, never as
 * configuration) and, when the plan is revised, the criteria so far with their evidence.
 */
export interface FollowupForPrompt {
  number: number;
  instruction: string;
  criteria?: readonly CriterionEvidence[];
}

export interface PlanContext {
  /** The task id the plan must carry (also used for branch and log paths). */
  taskId: string;
  /** Summaries of earlier task notes, most relevant first. */
  memory?: MemoryEntry[];
  /** The memory bank's section: the team's decisions (summary and files), from the repository. */
  decisions?: string;
  /** A follow-up: the plan so far is revised with the instruction. */
  followup?: FollowupForPrompt;
}

export interface LoopContext {
  taskId: string;
  prd: string;
  acceptanceCriteria: AcceptanceCriterion[];
  /** Earlier iterations, oldest first. */
  history: HistoryEntry[];
  /** The patterns the model may name in `used_patterns`. */
  patterns: PatternInfo[];
  /** Summaries of earlier task notes, most relevant first. */
  memory?: MemoryEntry[];
  /** The memory bank's section: the team's decisions (summary and files), from the repository. */
  decisions?: string;
  /** The facts after the latest worker run, when there are any. */
  lastFacts?: FactsForAssessment;
  /** False when no earlier worker thread can be resumed. Defaults to "some run_worker in history". */
  canResume?: boolean;
  /** The follow-up under way, when the task is one. */
  followup?: FollowupForPrompt;
}
