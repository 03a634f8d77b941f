/**
 * The Meta-agent's port: what the core shows it (the view), and the three things it asks of it (a plan, the
 * next action, an assessment). src/meta adapts the protocol's messages to it.
 */
import type { FollowupContext } from './followup.js';
import type { MemoryEntry } from './ports.js';
import type {
  Assessment,
  CriterionCheckResult,
  DodOutcome,
  MetaDecision,
  Plan,
  RunRecord,
  TaskFacts,
  Usage,
} from './types.js';

/** What the Meta-agent is shown on each call (the adapter bounds it to the prompt budget). */
export interface MetaView {
  taskId: string;
  prd: string;
  plan: Plan;
  history: readonly RunRecord[];
  /** Things the core wants the Meta-agent to know before its next decision (refusals, human answers). */
  feedback: readonly string[];
  patterns: readonly { name: string; description: string }[];
  memory: readonly MemoryEntry[];
  /** The memory bank's active entries (summary and files) as the worker prompt holds them; absent: none. */
  decisions?: string;
  /** The latest validation (facts, DoD, criteria checks), also when no worker run of this attempt led to it. */
  latest?: AssessmentEvidence;
  /** The follow-up under way: the person's instruction, shown quoted (never as configuration). */
  followup?: { number: number; instruction: string };
}

export interface MetaAgentPort {
  plan(input: {
    taskId: string;
    prd: string;
    memory: MetaView['memory'];
    decisions?: string;
    /** A follow-up: the plan so far is revised with this instruction (src/core/followup.ts). */
    followup?: FollowupContext;
    signal?: AbortSignal;
  }): Promise<{ plan: Plan; usage: Usage }>;
  nextAction(view: MetaView, signal?: AbortSignal): Promise<{ decision: MetaDecision; usage: Usage }>;
  assess(
    view: MetaView,
    evidence: AssessmentEvidence,
    signal?: AbortSignal,
  ): Promise<{ assessment: Assessment; usage: Usage }>;
}

/** What the assessor judges: the latest run (if any) and what the runner observed and ran since. */
export interface AssessmentEvidence {
  run: RunRecord | undefined;
  facts: TaskFacts;
  dod: DodOutcome | undefined;
  criteriaChecks: readonly CriterionCheckResult[];
  /** The replayed commit the checks ran on (RunRecord's `checkedHead`); null: not one commit, or not known. */
  checkedHead: string | null;
}
