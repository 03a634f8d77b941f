/**
 * Redaction of keys and configured secret patterns from everything agent-runner writes: logs, notes, event
 * journals, cassettes. Known secret values (the API keys it was given) are replaced wherever they appear;
 * patterns (`redact.patterns` in the config, plus common key shapes) catch keys it was not given.
 */

export const REDACTED = '[REDACTED]';

/** Shapes of well-known credentials. Conservative: long, distinctive prefixes only. */
const BUILTIN_PATTERNS = [
  /\bsk-[A-Za-z0-9_-]{16,}\b/g, // OpenAI-style keys (sk-..., sk-proj-...)
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g, // GitHub tokens
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key ids
  /\bxox[abprs]-[A-Za-z0-9-]{10,}\b/g, // Slack tokens
];

export type Redactor = (text: string) => string;

/** A redactor for these secret values (short values are ignored: too likely to hit ordinary text). */
export function createRedactor(
  secretValues: readonly (string | undefined)[],
  patterns: readonly string[] = [],
): Redactor {
  const values = [
    ...new Set(secretValues.filter((value): value is string => Boolean(value && value.length >= 8))),
  ].sort((a, b) => b.length - a.length);
  const compiled = [...BUILTIN_PATTERNS, ...patterns.map((pattern) => new RegExp(pattern, 'g'))];
  return (text) => {
    let out = text;
    for (const value of values) out = out.split(value).join(REDACTED);
    for (const pattern of compiled) out = out.replace(pattern, REDACTED);
    return out;
  };
}
