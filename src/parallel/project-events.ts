/**
 * Events of a project (a PRD split into subtasks). A subtask's own task events are passed on unchanged with
 * its id added (`subtask`); these are the project's own: the plan, why a subtask waits, its state, the
 * review, each merge, the combined DoD and the fix-ups. They drive the progress lines, `--json` and the
 * project's journal.
 */
import * as z from 'zod';
import {
  eventSchema,
  forgeKindSchema,
  runnerEventSchema,
  writtenNoteSchema,
  type StampedEvent,
} from '../core/events.js';
import {
  criterionCheckResultSchema,
  dodOutcomeSchema,
  planSchema,
  taskSummarySchema,
  usageSchema,
} from '../core/records.js';
import { reviewFindingSchema } from '../protocol/review.js';
import { SUBTASK_STATES } from './scheduler.js';

/** One subtask as planned: the protocol's fields in the core's words. */
export const plannedSubtaskSchema = z.object({
  id: z.string(),
  title: z.string(),
  prd: z.string(),
  plan: planSchema,
  writeScope: z.array(z.string()),
  readScope: z.array(z.string()),
  blockedBy: z.array(z.string()),
});
export type PlannedSubtask = z.infer<typeof plannedSubtaskSchema>;

/** A reviewer's verdict on one attempt of a subtask. */
export const reviewVerdictSchema = z.object({
  verdict: z.enum(['ok', 'ng']),
  summary: z.string(),
  findings: z.array(reviewFindingSchema),
});
export type ReviewVerdict = z.infer<typeof reviewVerdictSchema>;

/** A merged subtask's criterion check, run again on the combined tree, with the subtask it belongs to. */
export const subtaskCriterionCheckSchema = criterionCheckResultSchema.extend({ subtask: z.string() });
export type SubtaskCriterionCheck = z.infer<typeof subtaskCriterionCheckSchema>;

/**
 * One combined check on a commit of the integration branch: the DoD and every merged subtask's criteria
 * checks, on the same tree. `subtask` says what it checked (`alpha`, `alpha + fix-up`, `alpha, beta`).
 */
export const combinedCheckSchema = z.object({
  subtask: z.string(),
  headSha: z.string(),
  dod: dodOutcomeSchema,
  /** Absent in journals of versions that ran the DoD alone. */
  criteria: z.array(subtaskCriterionCheckSchema).optional(),
  /**
   * The sandbox it ran in: the integration sandbox brought to this head (`reused`), or a fresh one and why.
   * Absent in journals of versions that made one per check.
   */
  sandbox: z.object({ reused: z.boolean(), reason: z.string().optional() }).optional(),
});
export type CombinedCheck = z.infer<typeof combinedCheckSchema>;

const event = eventSchema;

/** The project's own events: one schema for what the project's journal is written with and read back as. */
export const projectEventSchema = z.discriminatedUnion('type', [
  event('project_started', {
    taskId: z.string(),
    branch: z.string(),
    baseSha: z.string(),
    max: z.number(),
    subtasks: z.array(plannedSubtaskSchema),
    prd: z.string(),
    prdPath: z.string(),
    /** The forge named when the project started (as a task's `options.forge`). */
    forge: forgeKindSchema.optional(),
  }),
  event('project_plan', {
    usage: usageSchema,
    split: z.boolean(),
    /** The planner answered with subtasks, run as one task: a split would not have paid (see splitPays). */
    asOneTask: z.object({ subtasks: z.number(), planMs: z.number() }).optional(),
  }),
  event('subtask_state', {
    subtask: z.string(),
    state: z.enum(SUBTASK_STATES),
    attempt: z.number(),
    taskId: z.string(),
    reason: z.string().optional(),
  }),
  event('subtask_waiting', { subtask: z.string(), kind: z.string(), reason: z.string() }),
  event('subtask_finished', { subtask: z.string(), taskId: z.string(), summary: taskSummarySchema }),
  event('review', {
    subtask: z.string(),
    taskId: z.string(),
    review: reviewVerdictSchema,
    usage: usageSchema,
    /** The commit reviewed (absent in older journals); an early review of a head the task moved on from is not taken. */
    headSha: z.string().optional(),
  }),
  event('replan', {
    subtask: z.string(),
    attempt: z.number(),
    reason: z.string(),
    plan: planSchema,
    /** The subtask's PRD for the new attempt (the old one plus why it was not merged). */
    prd: z.string(),
    usage: usageSchema,
  }),
  event('merge', {
    subtask: z.string(),
    branch: z.string(),
    status: z.enum(['merged', 'conflict', 'reverted']),
    sha: z.string(),
    files: z.array(z.string()).optional(),
  }),
  event('combined_dod', combinedCheckSchema.shape),
  event('fixup', { subtask: z.string(), taskId: z.string(), state: z.string(), reason: z.string() }),
  /** The parent note, as written: memory offers it only while its bytes match this digest. */
  event('project_note_written', writtenNoteSchema.shape),
  event('project_finished', { summary: taskSummarySchema }),
]);
export type ProjectEvent = z.infer<typeof projectEventSchema>;

/**
 * A line of the project's journal: one of the project's events, or a subtask's task event (when a subtask
 * and each of its worker runs started and ended) marked with the subtask. One union on `type`, so a damaged
 * line is reported against the event it claims to be.
 */
export const projectJournalLineSchema = z.discriminatedUnion('type', [
  ...projectEventSchema.options.map((option) => option.extend({ at: z.string() })),
  ...runnerEventSchema.options.map((option) => option.extend({ at: z.string(), subtask: z.string() })),
] as unknown as [z.ZodObject, ...z.ZodObject[]]) as unknown as z.ZodType<ProjectJournalLine>;
export type ProjectJournalLine = (ProjectEvent & { at: string }) | (StampedEvent & { subtask: string });

/** A subtask's task event, marked with its subtask id. */
export type SubtaskTaskEvent = StampedEvent & { subtask: string };

/** Every event of a run that `run` drives: the project's, its subtasks', or those of a task not split. */
export type StampedProjectEvent = (ProjectEvent & { at: string }) | SubtaskTaskEvent | StampedEvent;
