/**
 * The core's domain types: what the loop knows about a task. Records that cross a boundary (the journal,
 * `--json`) are inferred from their zod schemas in records.ts; adapters translate into these once.
 */
import type * as z from 'zod';
import type {
  assessmentSchema,
  criterionCheckResultSchema,
  criterionCheckStatusSchema,
  criterionEvidenceSchema,
  criterionStatusSchema,
  dodCheckResultSchema,
  dodCheckStatusSchema,
  dodOutcomeSchema,
  followupPlanChangesSchema,
  followupSummarySchema,
  baselineSchema,
  metaDecisionSchema,
  planSchema,
  replayCapSchema,
  rootCauseSchema,
  runRecordSchema,
  taskFactsSchema,
  taskSummarySchema,
  testCountsSchema,
  usageSchema,
} from './records.js';

// One type per concept: the acceptance criterion (and its check) is the protocol's zod schema, used as is
// by the loop, the prompts, the worker prompt and the note. No hand mapping, so no field gets lost.
export type { AcceptanceCriterion, CriterionCheck } from '../protocol/messages.js';

/** The plan: the PRD's title and its acceptance criteria. */
export type Plan = z.infer<typeof planSchema>;
export type MetaDecision = z.infer<typeof metaDecisionSchema>;
export type MetaActionKind = MetaDecision['action'];
export type CriterionStatus = z.infer<typeof criterionStatusSchema>;
export type Assessment = z.infer<typeof assessmentSchema>;
/** Tokens and money of one model call or one worker run: the one usage type, Meta-agent and worker alike. */
export type Usage = z.infer<typeof usageSchema>;
/** Tests a check's output says passed, failed and were skipped: evidence shown, never gated on. */
export type TestCounts = z.infer<typeof testCountsSchema>;
export type DodCheckStatus = z.infer<typeof dodCheckStatusSchema>;
export type DodCheckResult = z.infer<typeof dodCheckResultSchema>;
export type DodOutcome = z.infer<typeof dodOutcomeSchema>;
export type Baseline = z.infer<typeof baselineSchema>;
export type BaseComparison = NonNullable<DodCheckResult['base']>;
/**
 * The result of one acceptance criterion's check. `passed`, `failed` and `timeout` were executed (or, for
 * `file_exists`, observed on the task branch); `not_executable` says why it could not run here;
 * `not_executed` is a kind agent-runner does not run (`manual`, `playwright`...), kept for the assessor.
 */
export type CriterionCheckStatus = z.infer<typeof criterionCheckStatusSchema>;
export type CriterionCheckResult = z.infer<typeof criterionCheckResultSchema>;
/** Statuses of a check that was really executed or observed (evidence either way). */
export const EXECUTED_CHECK_STATUSES: readonly CriterionCheckStatus[] = ['passed', 'failed', 'timeout'];
/** What the runner observed itself after a run. */
export type TaskFacts = z.infer<typeof taskFactsSchema>;
/** A bound of the replay (`sandbox.replay.*`) the worker's commits went over. */
export type ReplayCap = z.infer<typeof replayCapSchema>;
/** One worker run and what followed it. */
export type RunRecord = z.infer<typeof runRecordSchema>;

/** One acceptance criterion with everything known about it: the plan, the assessment, its check's result. */
export type CriterionEvidence = z.infer<typeof criterionEvidenceSchema>;

/** The check a task that did not complete stopped on, with its error line and fix. */
export type RootCause = z.infer<typeof rootCauseSchema>;

/** How a task ended: what `run` prints, `--json` ends with, and `task_finished` records. */
export type TaskSummary = z.infer<typeof taskSummarySchema>;

/** What a follow-up changed in the plan, as the runner merged it (src/core/followup.ts). */
export type FollowupPlanChanges = z.infer<typeof followupPlanChangesSchema>;
/** The follow-up a task's attempt belongs to: its instruction, the criteria before, the merge, earlier spending. */
export type FollowupSummary = z.infer<typeof followupSummarySchema>;
