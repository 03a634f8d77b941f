/**
 * A decomposition: the second answer `plan_task` may give. Instead of acceptance criteria for one task, the
 * Meta-agent splits the PRD into subtasks, each with its own PRD excerpt, criteria, a write scope (globs, the
 * physical limit of what its worker may change) and the ids of the subtasks it waits for. The subtasks form
 * a graph that must be acyclic, with known ids only: every problem is reported with its dotted path so it can
 * be sent back for repair like any other protocol error.
 */
import * as z from 'zod';
import {
  acceptanceCriterionSchema,
  planTaskMessageSchema,
  PROTOCOL_VERSION,
  type PlanTaskMessage,
} from './messages.js';
import { parseMessageAs, type ParseMessageResult } from './parse-message.js';

/** The most subtasks one plan may hold: more is a sign the PRD should be split by a person. */
export const MAX_SUBTASKS = 12;

// Subtask ids become part of task ids and branch names (`agent-runner/<ID>--<SUB>`): no `.`, no `--`.
const subtaskId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*$/, 'use letters, digits, `_` and single `-`, e.g. api')
  .max(32, 'use at most 32 characters')
  // The project's own entries share the id space: `<ID>--integration`, `<ID>--check-N`, `<ID>--fixup-N`, and a
  // subtask's later attempts `<ID>--<SUB>-rN`.
  .refine(
    (id) => id !== 'integration' && !/^(?:check|fixup)-\d+$/.test(id) && !/-r\d+$/.test(id),
    "this id is reserved (integration, check-N, fixup-N and ids ending in -rN name the project's own entries); choose another",
  )
  .describe('a short id such as api or ui-form');

const text = z.string().refine((value) => value.trim() !== '', 'must not be empty');

const glob = z
  .string()
  .refine((value) => value.trim() !== '', 'must not be empty')
  .refine(
    (value) => !value.split('/').includes('..'),
    'must stay inside the repository (no `..`); globs are relative to its root',
  );

export const subtaskSchema = z.strictObject({
  id: subtaskId,
  title: text.describe('one line'),
  prd: text.describe('the part of the PRD this subtask implements, self-contained (use a `|` block scalar)'),
  acceptance_criteria: z
    .array(acceptanceCriterionSchema)
    .min(1, 'give at least one acceptance criterion')
    .describe('criteria of this subtask alone'),
  write_scope: z
    .array(glob)
    .min(1, 'give at least one glob: a subtask must say which paths it may write')
    .describe('globs of the paths this subtask may create or change, e.g. src/api/**'),
  read_scope: z
    .array(glob)
    .default([])
    .describe('globs of paths it must not change but relies on (read-only for its worker)'),
  blocked_by: z
    .array(subtaskId)
    .default([])
    .describe('ids of subtasks that must be merged before this one starts'),
});
export type Subtask = z.infer<typeof subtaskSchema>;

/** Cycles among `blocked_by`, each as the ids along it (`a → b → a`), found by depth-first search. */
export function findCycles(subtasks: readonly Pick<Subtask, 'id' | 'blocked_by'>[]): string[][] {
  const edges = new Map(subtasks.map((subtask) => [subtask.id, subtask.blocked_by]));
  const state = new Map<string, 'visiting' | 'done'>();
  const cycles: string[][] = [];
  const visit = (id: string, trail: string[]) => {
    if (state.get(id) === 'done') return;
    if (state.get(id) === 'visiting') {
      cycles.push([...trail.slice(trail.indexOf(id)), id]);
      return;
    }
    state.set(id, 'visiting');
    for (const next of edges.get(id) ?? []) if (edges.has(next) && next !== id) visit(next, [...trail, id]);
    state.set(id, 'done');
  };
  for (const subtask of subtasks) visit(subtask.id, []);
  return cycles;
}

export const decompositionPayloadSchema = z
  .strictObject({
    task_id: z.string().describe('the task id given in the request'),
    subtasks: z
      .array(subtaskSchema)
      .min(2, 'a decomposition has at least 2 subtasks; for one, answer with acceptance_criteria instead')
      .max(MAX_SUBTASKS, `at most ${MAX_SUBTASKS} subtasks`),
  })
  .superRefine((payload, context) => {
    const ids = new Set<string>();
    payload.subtasks.forEach((subtask, index) => {
      if (ids.has(subtask.id))
        context.addIssue({
          code: 'custom',
          path: ['subtasks', index, 'id'],
          message: `duplicate subtask id \`${subtask.id}\`; ids must be unique`,
        });
      ids.add(subtask.id);
      const criterionIds = new Set<string>();
      subtask.acceptance_criteria.forEach((criterion, criterionIndex) => {
        if (criterionIds.has(criterion.id))
          context.addIssue({
            code: 'custom',
            path: ['subtasks', index, 'acceptance_criteria', criterionIndex, 'id'],
            message: `duplicate id \`${criterion.id}\`; ids must be unique within a subtask`,
          });
        criterionIds.add(criterion.id);
      });
    });
    payload.subtasks.forEach((subtask, index) => {
      subtask.blocked_by.forEach((blocker, blockerIndex) => {
        const path = ['subtasks', index, 'blocked_by', blockerIndex];
        if (blocker === subtask.id)
          context.addIssue({ code: 'custom', path, message: 'a subtask cannot wait for itself; remove it' });
        else if (!ids.has(blocker))
          context.addIssue({
            code: 'custom',
            path,
            message: `unknown subtask \`${blocker}\`; the subtasks are: ${[...ids].join(', ')}`,
          });
      });
    });
    for (const cycle of findCycles(payload.subtasks)) {
      const first = payload.subtasks.findIndex((subtask) => subtask.id === cycle[0]);
      context.addIssue({
        code: 'custom',
        path: ['subtasks', first, 'blocked_by'],
        message: `dependency cycle ${cycle.join(' → ')}; a subtask can only wait for subtasks that do not wait for it`,
      });
    }
  });
export type DecompositionPayload = z.infer<typeof decompositionPayloadSchema>;

/** `plan_task` answered with subtasks. */
export const decompositionMessageSchema = z.strictObject({
  type: z.literal('plan_task'),
  version: z.literal(PROTOCOL_VERSION),
  payload: decompositionPayloadSchema,
});
export type DecompositionMessage = z.infer<typeof decompositionMessageSchema>;

/** True when a `plan_task` payload answers with subtasks rather than acceptance criteria. */
export function isDecompositionValue(value: unknown): boolean {
  const payload = (value as { payload?: unknown } | null)?.payload;
  return typeof payload === 'object' && payload !== null && 'subtasks' in payload;
}

/** A `plan_task` answer: criteria for one task, or subtasks. */
export type PlanAnswer = PlanTaskMessage | DecompositionMessage;

export interface PlanAnswerContext {
  /** The task id the answer must carry. */
  taskId: string;
  /** False (`parallel.split: never`, `--single`, a re-plan of one subtask): subtasks are refused. */
  allowSubtasks: boolean;
}

/** Parses a `plan_task` reply that may be either answer; subtasks are refused unless allowed. */
export function parsePlanAnswer(reply: string, context: PlanAnswerContext): ParseMessageResult<PlanAnswer> {
  return parseMessageAs<PlanAnswer>(
    reply,
    'plan_task',
    planTaskMessageSchema,
    (message) =>
      message.payload.task_id === context.taskId
        ? []
        : [
            {
              path: 'payload.task_id',
              message: `is \`${message.payload.task_id}\` but the task id is \`${context.taskId}\`; use it unchanged`,
            },
          ],
    (value) => {
      if (!isDecompositionValue(value)) return null;
      if (!context.allowSubtasks) return { expected: 'plan_task', schema: singleOnlySchema };
      return { expected: 'plan_task', schema: decompositionMessageSchema };
    },
  );
}

// A decomposition where only one task may be planned: refused with the fix rather than with zod's noise.
const singleOnlySchema = z.unknown().superRefine((_value, context) => {
  context.addIssue({
    code: 'custom',
    path: ['payload', 'subtasks'],
    message:
      'this task must not be split; remove `subtasks` and give `acceptance_criteria` for the whole task',
  });
}) as unknown as z.ZodType<PlanAnswer>;
