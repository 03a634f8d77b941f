/**
 * The one rule for task ids. A task id becomes a path component (`.agent-runner/runs/<ID>`), a git ref
 * component (`agent-runner/<ID>`), a container label and the protocol's `task_id`, so the CLI, the workspace
 * and the protocol all check it with this schema and nothing else.
 */
import * as z from 'zod';

/** Letters, digits, `.`, `_`, `-`; starts with a letter or digit; at most 64 characters. */
export const TASK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** What a person is told when an id breaks the rule. */
export const TASK_ID_RULE =
  "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, without '..' and not ending in '.' or '.lock'";

/** The task id schema (git ref rules included: no `..`, no trailing `.` or `.lock`). */
export const taskIdSchema = z
  .string()
  .regex(TASK_ID_PATTERN, `use ${TASK_ID_RULE}, e.g. ADD-SLUGIFY-1`)
  .refine((value) => !value.includes('..'), "must not contain '..'")
  .refine((value) => !value.endsWith('.') && !value.endsWith('.lock'), "must not end in '.' or '.lock'")
  .describe('a task id such as ADD-SLUGIFY-1');

/** True when `value` is a valid task id. */
export function isValidTaskId(value: string): boolean {
  return taskIdSchema.safeParse(value).success;
}
