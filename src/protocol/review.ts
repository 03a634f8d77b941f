/**
 * `review`: the Meta-agent in a reviewer role judges one subtask's result (its diff, criteria and evidence)
 * after its gate passed and before it merges. `ng` sends the subtask back to the planner with the findings;
 * it is never a send-back to the worker.
 */
import * as z from 'zod';
import { PROTOCOL_VERSION } from './messages.js';
import { parseMessageAs, type ParseMessageResult } from './parse-message.js';

export const REVIEW_VERDICTS = ['ok', 'ng'] as const;
export const FINDING_SEVERITIES = ['blocker', 'major', 'minor', 'info'] as const;

const text = z.string().refine((value) => value.trim() !== '', 'must not be empty');

export const reviewFindingSchema = z.strictObject({
  file: text.describe('a path in the repository'),
  line: z.number().int().positive().optional().describe('the line the finding is about, when there is one'),
  severity: z.enum(FINDING_SEVERITIES),
  message: text.describe('what is wrong and what to do instead'),
});
export type ReviewFinding = z.infer<typeof reviewFindingSchema>;

export const reviewPayloadSchema = z
  .strictObject({
    task_id: text.describe('the subtask task id given in the request'),
    verdict: z.enum(REVIEW_VERDICTS).describe('ok: may merge; ng: must be planned again'),
    summary: text.describe('one or two sentences'),
    findings: z.array(reviewFindingSchema).default([]).describe('what the review found, worst first'),
  })
  .superRefine((payload, context) => {
    if (payload.verdict === 'ng' && payload.findings.length === 0)
      context.addIssue({
        code: 'custom',
        path: ['findings'],
        message: 'give at least one finding when the verdict is ng',
      });
    if (payload.verdict === 'ok' && payload.findings.some((finding) => finding.severity === 'blocker'))
      context.addIssue({
        code: 'custom',
        path: ['verdict'],
        message: 'is ok but a finding is a blocker; make them agree',
      });
  });

export const reviewMessageSchema = z.strictObject({
  type: z.literal('review'),
  version: z.literal(PROTOCOL_VERSION),
  payload: reviewPayloadSchema,
});
export type ReviewMessage = z.infer<typeof reviewMessageSchema>;
export type ReviewPayload = ReviewMessage['payload'];

/** Parses a reviewer's reply; `taskId` is the subtask's task id the review must name. */
export function parseReview(reply: string, taskId: string): ParseMessageResult<ReviewMessage> {
  return parseMessageAs(reply, 'review', reviewMessageSchema, (message) =>
    message.payload.task_id === taskId
      ? []
      : [
          {
            path: 'payload.task_id',
            message: `is \`${message.payload.task_id}\` but the task id is \`${taskId}\`; use it unchanged`,
          },
        ],
  );
}
