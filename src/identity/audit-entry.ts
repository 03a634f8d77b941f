/**
 * One entry of the audit log: who (the token's name and role), what (the action), which task, from where (the
 * caller's address), how it ended (the HTTP status), on which node. Written for every call that changes
 * something, to the server's audit log (a file, or the control database) and, for a task's action, to that
 * task's journal as an `audit` event. It holds no token: a token's name is all that names the caller.
 */
import * as z from 'zod';
import { actorSchema } from './roles.js';

export const auditActionSchema = z.enum([
  'task.start',
  'task.queue',
  'task.answer',
  'task.stop',
  'task.resume',
  'task.followup',
  'token.create',
  'token.revoke',
  'memory.accept',
  'memory.reject',
  /** A signed forge webhook queued a task (the actor: `github:<login>` or `gitlab:<username>`). */
  'webhook.task',
  /** A signed forge webhook's review started a follow-up of the request's task (`followup --from-review`). */
  'webhook.followup',
  /** A signed forge webhook asked for nothing, or its author may not instruct: nothing queued. */
  'webhook.ignore',
]);
export type AuditAction = z.infer<typeof auditActionSchema>;

/** What an audit entry says, without its time (a journal event carries its own `at`). */
export const auditEntrySchema = z.object({
  actor: actorSchema,
  action: auditActionSchema,
  taskId: z.string().optional(),
  /** The token the action was about (`token.create`, `token.revoke`): its name. */
  tokenName: z.string().optional(),
  /** The memory bank proposal the action was about (`memory.accept`, `memory.reject`): its id, TASK-ID#N. */
  proposalId: z.string().optional(),
  /** The caller's address (`cli` for a command run on the store directly). */
  from: z.string(),
  /** The HTTP status the call was answered with (a CLI command that succeeded: 200). */
  status: z.number(),
  /** The node of a fleet that took the call. */
  node: z.string().optional(),
  /**
   * A webhook's task: the forge page it came from (the issue or comment), a link the server built from the
   * forge's address and the event's numbers, never taken from text.
   */
  origin: z.url({ protocol: /^https?$/ }).optional(),
});
export type AuditEntry = z.infer<typeof auditEntrySchema>;

export const auditRecordSchema = auditEntrySchema.extend({ at: z.string() });
export type AuditRecord = z.infer<typeof auditRecordSchema>;

/** Where the audit log is kept: a file of the state directory, or a table of the control database. */
export interface AuditLog {
  append(record: AuditRecord): Promise<void>;
  /** The entries at or after `since` (all without it), oldest first. */
  list(options?: { since?: Date }): Promise<AuditRecord[]>;
}
