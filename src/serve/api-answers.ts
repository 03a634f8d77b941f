/**
 * The API's answers that are not a success, and the checks every handler shares: a JSON error
 * (`{"error": {"code", "message", "field"?}}`), a body checked by its zod schema, a task id from the path.
 */
import type { Context } from 'hono';
import type * as z from 'zod';
import { taskIdParamSchema } from './api-schemas.js';

export function apiError(
  c: Context,
  status: 400 | 401 | 403 | 404 | 409 | 413 | 500 | 501,
  code: string,
  message: string,
  field?: string,
) {
  return c.json({ error: { code, message, ...(field !== undefined ? { field } : {}) } }, status);
}

/** A body checked by `schema`: the parsed value, or the 400 answer naming the first wrong field. */
export async function body<T>(
  c: Context,
  schema: z.ZodType<T>,
  /** What an empty body stands for (absent: a body is required). */
  empty?: unknown,
): Promise<{ value: T } | { answer: Response }> {
  let raw: unknown;
  try {
    const text = await c.req.text();
    raw = text.trim() === '' && empty !== undefined ? empty : JSON.parse(text);
  } catch {
    return { answer: apiError(c, 400, 'invalid_json', 'The body is not JSON.') };
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { value: parsed.data };
  const issue = parsed.error.issues[0];
  const field = issue?.path.map(String).join('.') || undefined;
  return {
    answer: apiError(
      c,
      400,
      'invalid_body',
      `${field ?? 'body'}: ${issue?.message ?? 'invalid'}`,
      field ?? '',
    ),
  };
}

/** The task named in the path, or the answer when the id is malformed (400). */
export function named(c: Context): { taskId: string } | { answer: Response } {
  const parsed = taskIdParamSchema.safeParse(c.req.param('id'));
  if (!parsed.success) return { answer: apiError(c, 400, 'invalid_task_id', 'Not a task id.', 'id') };
  return { taskId: parsed.data };
}
