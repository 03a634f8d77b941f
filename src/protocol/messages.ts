/**
 * The Meta-agent's messages as zod schemas: the single source of their types, of the field list shown in
 * the system prompts, and of the checks run on every reply. Every message is `{ type, version: 1, payload }`.
 * Rules inside one message (run_worker needs worker_call, ids unique) live here as refinements; rules that
 * need the caller's context (known patterns, the plan's criteria) live in `parse-message.ts`.
 */
import * as z from 'zod';
import { taskIdSchema } from '../core/task-id.js';

/** The only protocol version this runner speaks. */
export const PROTOCOL_VERSION = 1;

const identifier = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'use 1-64 letters, digits, `.`, `_` or `-`, e.g. AC-1')
  .describe('an identifier such as AC-1');

// Not `.trim()`: that would transform the value (a worker prompt must reach the worker as written).
const text = z.string().refine((value) => value.trim() !== '', 'must not be empty');

// ---------------------------------------------------------------------------------------------------------
// plan_task
// ---------------------------------------------------------------------------------------------------------

/**
 * Labels suggested to the model for a criterion's `type`. The type is a free label: the specification's own
 * examples use others (`e2e`), and an unknown label is kept as written.
 */
export const ACCEPTANCE_CRITERION_TYPES = [
  'functional',
  'test',
  'e2e',
  'quality',
  'security',
  'performance',
  'documentation',
  'other',
] as const;

/**
 * Check kinds agent-runner executes itself. `check.kind` is open: any other kind (`manual`, `playwright`...)
 * is kept as written, shown to the assessor and recorded as not executed.
 */
export const CHECK_KINDS = ['command', 'test', 'file_exists'] as const;
/** Kinds suggested to the model besides the executed ones. */
export const SUGGESTED_CHECK_KINDS = [...CHECK_KINDS, 'manual', 'playwright'] as const;

const label = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9 ._:/-]{0,63}$/,
    'use a short label of letters, digits, `_`, `-`, e.g. functional',
  );

/** A criterion's check, as the model writes it. Kinds other than CHECK_KINDS are kept, not executed. */
export const criterionCheckSchema = z
  .strictObject({
    kind: label.describe(
      `how the criterion can be verified: ${SUGGESTED_CHECK_KINDS.join(' | ')} or another label`,
    ),
    file: text
      .optional()
      .describe('a path in the repository (required for file_exists; the test file for test)'),
    test_name: text.optional().describe('the name of a test that proves it (for kind test)'),
    command: text
      .optional()
      .describe('a shell command run in the sandbox that exits 0 when it holds (required for command)'),
  })
  .superRefine((check, context) => {
    if (check.kind === 'command' && check.command === undefined)
      context.addIssue({ code: 'custom', path: ['command'], message: 'required when kind is command' });
    if (check.kind === 'file_exists' && check.file === undefined)
      context.addIssue({ code: 'custom', path: ['file'], message: 'required when kind is file_exists' });
    if (check.kind === 'test' && check.test_name === undefined && check.command === undefined)
      context.addIssue({
        code: 'custom',
        path: ['test_name'],
        message: 'required when kind is test (or give command)',
      });
  });
/** One check of an acceptance criterion (the single type used by the core, the prompts and the note). */
export type CriterionCheck = z.infer<typeof criterionCheckSchema>;

/** An acceptance criterion: the single schema of the concept, extended by any message that carries criteria. */
export const acceptanceCriterionSchema = z.strictObject({
  id: identifier.describe('unique id, e.g. AC-1'),
  description: text.describe('one observable outcome'),
  type: label.describe(`a label: ${ACCEPTANCE_CRITERION_TYPES.join(' | ')} or another one`),
  critical: z.boolean().describe('true when the task cannot be complete without it'),
  check: criterionCheckSchema.optional(),
});
export type AcceptanceCriterion = z.infer<typeof acceptanceCriterionSchema>;

/** A list of acceptance criteria with unique ids (plan_task, and any message that plans criteria). */
export const acceptanceCriteriaSchema = z
  .array(acceptanceCriterionSchema)
  .min(1, 'give at least one acceptance criterion')
  .superRefine((criteria, context) => {
    const seen = new Set<string>();
    criteria.forEach((criterion, index) => {
      if (seen.has(criterion.id))
        context.addIssue({
          code: 'custom',
          path: [index, 'id'],
          message: `duplicate id \`${criterion.id}\`; ids must be unique`,
        });
      seen.add(criterion.id);
    });
  });

export const planTaskPayloadSchema = z.strictObject({
  task_id: taskIdSchema.describe('the task id given in the request'),
  acceptance_criteria: acceptanceCriteriaSchema,
});

export const planTaskMessageSchema = z.strictObject({
  type: z.literal('plan_task'),
  version: z.literal(PROTOCOL_VERSION),
  payload: planTaskPayloadSchema,
});
export type PlanTaskMessage = z.infer<typeof planTaskMessageSchema>;
export type PlanTaskPayload = PlanTaskMessage['payload'];

// ---------------------------------------------------------------------------------------------------------
// next_action
// ---------------------------------------------------------------------------------------------------------

export const NEXT_ACTIONS = ['run_worker', 'mark_complete', 'ask_human', 'abort'] as const;
export type NextActionKind = (typeof NEXT_ACTIONS)[number];

export const workerCallSchema = z.strictObject({
  worker_type: text.describe('one of the worker types offered, e.g. codex'),
  mode: z.enum(['exec', 'resume']).describe('exec starts a new worker thread; resume continues the last one'),
  prompt: text.describe('the full instruction for the worker (use a `|` block scalar)'),
});

export const nextActionPayloadSchema = z
  .strictObject({
    decision: z.strictObject({
      action: z.enum(NEXT_ACTIONS),
      reason: text.describe('why, in one or two sentences'),
    }),
    used_patterns: z
      .array(text)
      .default([])
      .describe('names of the patterns this decision follows (only names from the list given)'),
    worker_call: workerCallSchema.optional().describe('required when action is run_worker, absent otherwise'),
    question: text.optional().describe('required when action is ask_human, absent otherwise'),
  })
  .superRefine((payload, context) => {
    const action = payload.decision.action;
    if (action === 'run_worker' && payload.worker_call === undefined)
      context.addIssue({
        code: 'custom',
        path: ['worker_call'],
        message: 'required when decision.action is run_worker',
      });
    if (action !== 'run_worker' && payload.worker_call !== undefined)
      context.addIssue({
        code: 'custom',
        path: ['worker_call'],
        message: `only allowed when decision.action is run_worker (it is ${action}); remove it`,
      });
    if (action === 'ask_human' && payload.question === undefined)
      context.addIssue({
        code: 'custom',
        path: ['question'],
        message: 'required when decision.action is ask_human',
      });
    if (action !== 'ask_human' && payload.question !== undefined)
      context.addIssue({
        code: 'custom',
        path: ['question'],
        message: `only allowed when decision.action is ask_human (it is ${action}); remove it`,
      });
  });

export const nextActionMessageSchema = z.strictObject({
  type: z.literal('next_action'),
  version: z.literal(PROTOCOL_VERSION),
  payload: nextActionPayloadSchema,
});
export type NextActionMessage = z.infer<typeof nextActionMessageSchema>;
export type NextActionPayload = NextActionMessage['payload'];
export type WorkerCall = z.infer<typeof workerCallSchema>;

// ---------------------------------------------------------------------------------------------------------
// completion_assessment
// ---------------------------------------------------------------------------------------------------------

export const CRITERION_STATUSES = ['passed', 'failed', 'unknown'] as const;

export const criterionAssessmentSchema = z.strictObject({
  id: identifier.describe('the id of an acceptance criterion of the plan'),
  status: z.enum(CRITERION_STATUSES),
  comment: z.string().describe('the evidence, e.g. which check passed'),
});
export type CriterionAssessment = z.infer<typeof criterionAssessmentSchema>;

/** At most this many decisions per assessment, each title and text at most so long. */
export const DECISION_LIMITS = { count: 5, title: 120, text: 2000 } as const;

/**
 * A decision the task made that the team may want every later task to follow. It is offered to a person as a
 * memory bank proposal and becomes an entry only when that person accepts it.
 */
export const decisionSchema = z.strictObject({
  title: text
    .refine((value) => !/[\r\n]/.test(value), 'must be one line')
    .pipe(z.string().max(DECISION_LIMITS.title))
    .describe(`a short title, one line, at most ${DECISION_LIMITS.title} characters`),
  text: text
    .pipe(z.string().max(DECISION_LIMITS.text))
    .describe(`the decision and why, at most ${DECISION_LIMITS.text} characters`),
});
export type Decision = z.infer<typeof decisionSchema>;

export const completionAssessmentPayloadSchema = z
  .strictObject({
    all_criteria_satisfied: z.boolean(),
    summary: text.describe('what was done and what the facts show'),
    by_criterion: z.array(criterionAssessmentSchema).min(1).describe('one entry per acceptance criterion'),
    retrospective: z
      .array(text)
      .default([])
      .describe('short notes for the task note: what helped, what went wrong, what to do next time'),
    decisions: z
      .array(decisionSchema)
      .max(DECISION_LIMITS.count)
      .default([])
      .describe(
        `at most ${DECISION_LIMITS.count} lasting decisions this task made that later tasks should follow ` +
          '(offered to a person for the memory bank); usually none',
      ),
  })
  .superRefine((payload, context) => {
    const seen = new Set<string>();
    payload.by_criterion.forEach((entry, index) => {
      if (seen.has(entry.id))
        context.addIssue({
          code: 'custom',
          path: ['by_criterion', index, 'id'],
          message: `duplicate id \`${entry.id}\`; give one entry per criterion`,
        });
      seen.add(entry.id);
    });
    const notPassed = payload.by_criterion
      .filter((entry) => entry.status !== 'passed')
      .map((entry) => entry.id);
    if (payload.all_criteria_satisfied && notPassed.length > 0)
      context.addIssue({
        code: 'custom',
        path: ['all_criteria_satisfied'],
        message: `is true but ${notPassed.join(', ')} did not pass; make them agree`,
      });
  });

export const completionAssessmentMessageSchema = z.strictObject({
  type: z.literal('completion_assessment'),
  version: z.literal(PROTOCOL_VERSION),
  payload: completionAssessmentPayloadSchema,
});
export type CompletionAssessmentMessage = z.infer<typeof completionAssessmentMessageSchema>;
export type CompletionAssessmentPayload = CompletionAssessmentMessage['payload'];

// ---------------------------------------------------------------------------------------------------------

/** Every message schema by its `type`. */
export const MESSAGE_SCHEMAS = {
  plan_task: planTaskMessageSchema,
  next_action: nextActionMessageSchema,
  completion_assessment: completionAssessmentMessageSchema,
} as const;

export type MessageType = keyof typeof MESSAGE_SCHEMAS;
export const MESSAGE_TYPES = Object.keys(MESSAGE_SCHEMAS) as MessageType[];
/** The parsed message of a given type. */
export type MessageOf<T extends MessageType> = z.infer<(typeof MESSAGE_SCHEMAS)[T]>;
export type ProtocolMessage = MessageOf<MessageType>;
