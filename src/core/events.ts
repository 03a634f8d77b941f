/**
 * Typed events of a task: every transition, every Meta-agent call, every worker event, the facts and the
 * DoD results. They drive live progress, `--json` and the run's event journal. One schema for what is
 * written and what is read back: the types are inferred from the schemas, and `resume` validates every
 * journalled event against them (src/lifecycle/task-journal-state.ts).
 */
import * as z from 'zod';
import {
  assessmentSchema,
  criterionCheckResultSchema,
  dodOutcomeSchema,
  followupPlanChangesSchema,
  followupSummarySchema,
  baselineSchema,
  metaDecisionSchema,
  planSchema,
  runRecordSchema,
  sandboxRuntimeSchema,
  taskFactsSchema,
  taskStateSchema,
  taskSummarySchema,
  usageSchema,
  workerEventSchema,
} from './records.js';
import { auditEntrySchema } from '../identity/audit-entry.js';

/** How the task was started, recorded in `task_started` so `resume` can start it again the same way. */
/** The forges agent-runner opens pull requests (GitHub) and merge requests (GitLab) on. */
export const forgeKindSchema = z.enum(['github', 'gitlab']);
export type ForgeKind = z.infer<typeof forgeKindSchema>;

export const taskStartOptionsSchema = z.object({
  prdPath: z.string(),
  /** The PRD text as it was when the task started (a resumed task keeps working on the same PRD). */
  prd: z.string(),
  base: z.string().optional(),
  dodSkipped: z.boolean(),
  /** Set on a resumed attempt. */
  resumed: z.boolean().optional(),
  /** `--keep-sandbox`, `--record FILE`, `--replay FILE`: a resumed attempt keeps them. */
  keepSandbox: z.boolean().optional(),
  record: z.string().optional(),
  replay: z.string().optional(),
  /**
   * The forge named when the task started (`--forge`, `AGENT_RUNNER_FORGE`, `deliver.forge`): a later
   * `resume` or `deliver` that names none uses it, so its token still answers the remote.
   */
  forge: forgeKindSchema.optional(),
});
export type TaskStartOptions = z.infer<typeof taskStartOptionsSchema>;

/** Why the model gateway refused a request (see docs/gateway.md). */
export const gatewayRefusalReasonSchema = z.enum([
  'path',
  'route',
  'token',
  'model',
  'body_too_large',
  'headers_too_large',
  'rate_limit',
  'budget',
]);
export type GatewayRefusalReason = z.infer<typeof gatewayRefusalReasonSchema>;

/** A request the gateway refused: what was asked (the path clipped, redacted) and why. */
export const gatewayRefusalSchema = z.object({
  /** `worker`: the sandbox's socket; `meta`: the host's loopback route. */
  route: z.enum(['worker', 'meta']),
  method: z.string(),
  path: z.string(),
  status: z.number(),
  reason: gatewayRefusalReasonSchema,
  detail: z.string(),
});
export type GatewayRefusal = z.infer<typeof gatewayRefusalSchema>;

/** One `sandbox.setup` command: `started` before it runs, `finished` with its result. */
export const setupCommandReportSchema = z.object({
  /** 1-based position in `sandbox.setup`. */
  index: z.number(),
  command: z.string(),
  /** The network policy it ran under, e.g. `allowlist (registry.npmjs.org)`. */
  policy: z.string(),
  phase: z.enum(['started', 'finished']),
  durationMs: z.number().optional(),
  exitCode: z.number().optional(),
  timedOut: z.boolean().optional(),
  /** The end of its output (redacted), on failure only. */
  outputTail: z.string().optional(),
});
export type SetupCommandReport = z.infer<typeof setupCommandReportSchema>;

/**
 * A note the runner wrote: its path and the sha256 of its bytes. Memory offers a note only while its bytes
 * match the digest recorded when the runner wrote it (src/notes/memory.ts).
 */
export const writtenNoteSchema = z.object({ path: z.string(), sha256: z.string() });
export type WrittenNote = z.infer<typeof writtenNoteSchema>;

/** One event's schema: its `type` and its fields (the project's events are built the same way). */
export const eventSchema = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), ...shape });
const event = eventSchema;

export const runnerEventSchema = z.discriminatedUnion('type', [
  event('task_started', {
    taskId: z.string(),
    branch: z.string(),
    baseSha: z.string(),
    worktreePath: z.string(),
    dirtyStart: z.boolean(),
    options: taskStartOptionsSchema.optional(),
  }),
  event('transition', { from: taskStateSchema, to: taskStateSchema, reason: z.string().optional() }),
  /** `runtime`: the OCI runtime it runs under and why (absent in journals of older versions). */
  event('sandbox_started', { sandboxId: z.string(), runtime: sandboxRuntimeSchema.optional() }),
  event('setup_command', setupCommandReportSchema.shape),
  event('plan', { plan: planSchema, usage: usageSchema }),
  event('decision', { decision: metaDecisionSchema, usage: usageSchema }),
  event('worker_started', {
    run: z.number(),
    mode: z.string(),
    prompt: z.string(),
    worker: z.string().optional(),
    model: z.string().optional(),
  }),
  event('worker_event', { run: z.number(), event: workerEventSchema }),
  /** The run's events past the journal's bound (src/core/worker-event-bound.ts): how many were kept, how many not. */
  event('worker_events_dropped', { run: z.number(), kept: z.number(), dropped: z.number() }),
  event('worker_finished', {
    run: z.number(),
    exitCode: z.number(),
    timedOut: z.boolean(),
    failed: z.boolean(),
    durationMs: z.number(),
    worker: z.string().optional(),
    model: z.string().optional(),
    /** The run's tokens and cost (the gateway's count). */
    usage: usageSchema.optional(),
  }),
  /** The whole RunRecord, after the run and again once facts, DoD and assessment are in (resume reads it). */
  event('run_recorded', { run: z.number(), record: runRecordSchema }),
  event('facts', { run: z.number(), facts: taskFactsSchema }),
  event('dod', { run: z.number(), dod: dodOutcomeSchema }),
  /** The DoD on the base tree before any worker run (`dod.baseline: auto`), beside planning. */
  event('baseline', baselineSchema.shape),
  /** The acceptance criteria's checks (run 0: validated before any worker run of this task). */
  event('criteria_checks', { run: z.number(), results: z.array(criterionCheckResultSchema) }),
  /** The runner stopped a loop that made no progress. */
  event('stalled', { repeats: z.number(), what: z.string() }),
  event('assessment', { run: z.number(), assessment: assessmentSchema, usage: usageSchema }),
  event('refused', { reasons: z.array(z.string()) }),
  event('human', { question: z.string(), answer: z.string().nullable() }),
  event('preserved', { ref: z.string() }),
  /** Journals of earlier versions carry no digest: their notes are not memory. */
  event('note_written', writtenNoteSchema.partial({ sha256: true }).shape),
  event('task_finished', { summary: taskSummarySchema }),
  /**
   * A follow-up of the ended task began (`agent-runner followup`): its number, the person's instruction, the
   * branch head it starts from, the criteria and their evidence then, and what was spent before it.
   */
  event('followup_started', followupSummarySchema.omit({ changes: true }).shape),
  /** The follow-up's revised plan, as the runner merged it with the earlier criteria (src/core/followup.ts). */
  event('followup_planned', { number: z.number(), changes: followupPlanChangesSchema }),
  /** Written by the composition root as the gateway refuses a request (at most a bounded number per task). */
  event('gateway_refused', { refusal: gatewayRefusalSchema }),
  /**
   * In the fleet's database only, in place of a journal line it could not hold as the journal has it (bytes that
   * are not UTF-8, a raw NUL: never a line agent-runner writes; src/control/event-sink.ts): why. The line stays
   * in the journal file of the node that ran the task; a resume from the database's copy reads past it.
   */
  event('journal_line_unstored', { reason: z.string() }),
  /** Written by a server for a call that acted on the task: who, what, from where (src/identity/audit-entry.ts). */
  event('audit', auditEntrySchema.shape),
]);
export type RunnerEvent = z.infer<typeof runnerEventSchema>;

/** An event stamped with the time it happened: what the journal holds, line by line. */
export const stampedEventSchema = z.intersection(runnerEventSchema, z.object({ at: z.string() }));
export type StampedEvent = RunnerEvent & { at: string };

export type EventListener = (event: StampedEvent) => void;
