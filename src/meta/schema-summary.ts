/**
 * A compact, model-readable field list generated from a zod message schema, for the system prompts.
 * Generated rather than written by hand so the prompt cannot drift from what the reply is validated against.
 */
import * as z from 'zod';

interface JsonSchema {
  type?: string;
  const?: unknown;
  enum?: unknown[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  minItems?: number;
  default?: unknown;
}

function kind(schema: JsonSchema): string {
  if (schema.const !== undefined) return `exactly \`${String(schema.const)}\``;
  if (schema.enum) return `one of ${schema.enum.map(String).join(' | ')}`;
  if (schema.type === 'object') return 'map';
  if (schema.type === 'array') {
    const items = schema.items ?? {};
    const inner = items.type === 'object' ? 'maps' : kind(items);
    return `list of ${inner}${schema.minItems ? ` (at least ${schema.minItems})` : ''}`;
  }
  if (schema.type === 'string') return 'text';
  if (schema.type === 'boolean') return 'true or false';
  if (schema.type === 'number' || schema.type === 'integer') return 'number';
  return 'value';
}

function walk(schema: JsonSchema, path: string, required: boolean, lines: string[]): void {
  const presence = required
    ? 'required'
    : schema.default !== undefined
      ? `optional, default ${JSON.stringify(schema.default)}`
      : 'optional';
  const description = schema.description ? ` — ${schema.description}` : '';
  if (path) lines.push(`- ${path} (${presence}): ${kind(schema)}${description}`);
  if (schema.type === 'object') {
    for (const [key, inner] of Object.entries(schema.properties ?? {}))
      walk(inner, path ? `${path}.${key}` : key, (schema.required ?? []).includes(key), lines);
  } else if (schema.type === 'array' && schema.items?.type === 'object') {
    for (const [key, inner] of Object.entries(schema.items.properties ?? {}))
      walk(inner, `${path}[].${key}`, (schema.items.required ?? []).includes(key), lines);
  }
}

/** One line per field: `- payload.decision.action (required): one of run_worker | ...`. */
export function describeSchema(schema: z.ZodType): string[] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const lines: string[] = [];
  walk(json, '', true, lines);
  return lines;
}
