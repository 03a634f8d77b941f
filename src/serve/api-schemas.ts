/**
 * The server's requests, as zod schemas: they validate each request (a bad body gets 400 naming the field)
 * and the OpenAPI document is generated from them, so the two cannot drift apart.
 */
import * as z from 'zod';
import { taskIdSchema } from '../core/task-id.js';
import { roleSchema, tokenNameSchema } from '../identity/roles.js';

export const startTaskSchema = z
  .strictObject({
    prd: z.string().min(1).max(1_000_000).optional().describe('The PRD itself (Markdown)'),
    prdPath: z
      .string()
      .min(1)
      .optional()
      .describe('A PRD file of the repository, relative to its root (nothing outside it, links included)'),
    base: z.string().min(1).optional().describe('Base of the task branch (default: HEAD)'),
    repo: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A remote repository: the task is queued on the fleet (a server started with --control only)',
      ),
    taskId: taskIdSchema.optional().describe('Task id (default: from the PRD title)'),
    config: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Configuration overrides, as agent-runner.yaml keys (checked like the file)'),
    skipDod: z.boolean().optional().describe('Do not run the Definition-of-Done checks'),
    modelScript: z
      .string()
      .min(1)
      .optional()
      .describe('A scripted model (YAML, relative to the repository root) instead of a real one: the demo'),
  })
  .refine((body) => (body.prd === undefined) !== (body.prdPath === undefined), {
    message: 'give exactly one of prd (the text) and prdPath (a file)',
    path: ['prd'],
  });
export type StartTaskRequest = z.infer<typeof startTaskSchema>;

export const resumeSchema = z.strictObject({
  modelScript: z.string().min(1).optional().describe('A scripted model for this attempt (the demo)'),
  config: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Configuration overrides for this attempt, as agent-runner.yaml keys'),
});

/** `POST /api/tasks/{id}/followup`: an ended task continued on its branch with a person's instruction. */
export const followupSchema = z.strictObject({
  message: z
    .string()
    .min(1)
    .max(100_000)
    .describe("The person's instruction, quoted to the Meta-agent (never configuration)"),
  pr: z.boolean().optional().describe('Push the branch, then update the same pull/merge request'),
  modelScript: z.string().min(1).optional().describe('A scripted model for this follow-up (the demo)'),
  config: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Configuration overrides for this follow-up, as agent-runner.yaml keys'),
});
export type FollowupRequest = z.infer<typeof followupSchema>;

export const answerSchema = z.strictObject({
  text: z.string().min(1).max(100_000).describe("The answer to the task's question"),
});

/** A task id in a route: the one task-id rule, so an id cannot name a path outside `.agent-runner/`. */
export const taskIdParamSchema = taskIdSchema;

/** `POST /api/tokens`: a named token with a role. */
export const createTokenSchema = z.strictObject({
  name: tokenNameSchema.describe('Who the token names in the audit log and on the page'),
  role: roleSchema.describe(
    'viewer: reads; operator: also starts, answers, stops, resumes; admin: also tokens, audit',
  ),
});
