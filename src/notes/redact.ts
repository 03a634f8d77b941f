/**
 * Redaction of keys and configured secret patterns from everything agent-runner writes: logs, notes, event
 * journals, cassettes. Known secret values (the API keys it was given) are replaced wherever they appear;
 * patterns (`redact.patterns` in the config, plus common key shapes) catch keys it was not given.
 */

import type { Dirent } from 'node:fs';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

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

/**
 * Redacts every regular file under `dir` in place (files over `maxBytes` are left as they are). Used on the
 * worker's own state (codex's session files) after each run; replacing text inside JSON strings keeps them
 * valid, so `codex exec resume` still reads them.
 */
export async function redactFilesIn(
  dir: string,
  redact: Redactor,
  maxBytes = 64 * 1024 * 1024,
): Promise<number> {
  let changed = 0;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) changed += await redactFilesIn(full, redact, maxBytes);
    else if (entry.isFile() && (await stat(full)).size <= maxBytes) {
      const text = await readFile(full, 'utf8');
      const redacted = redact(text);
      if (redacted !== text) {
        await writeFile(full, redacted);
        changed += 1;
      }
    }
  }
  return changed;
}
