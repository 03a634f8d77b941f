/**
 * The one redaction point of agent-runner. A {@link Redaction} holds the secret values it was given (the API
 * keys, the gateway's per-task tokens) and the patterns (`redact.patterns` of the config plus common key
 * shapes); every writer goes through the same instance: stdout and stderr (src/cli/output.ts), the event
 * journal, the note, the worker's logs, codex's session files, the Meta-agent call logs, the gateway's log
 * and cassettes. Values added later (the gateway's tokens) reach every writer at once.
 */

import type { Dirent } from 'node:fs';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/schema.js';
import { configuredWorkers } from '../config/workers.js';

export const REDACTED = '[REDACTED]';

/** Shapes of well-known credentials. Conservative: long, distinctive prefixes only. */
const BUILTIN_PATTERNS = [
  /\bsk-[A-Za-z0-9_-]{16,}\b/g, // OpenAI-style keys (sk-..., sk-proj-...)
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g, // GitHub tokens
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key ids
  /\bxox[abprs]-[A-Za-z0-9-]{10,}\b/g, // Slack tokens
];

/** Secret values shorter than this are ignored: too likely to hit ordinary text. */
const MIN_SECRET_LENGTH = 8;

export type Redactor = (text: string) => string;

/** The secret values and patterns a task's configuration brings: every key and `redact.patterns`. */
export function configSecrets(
  config: Pick<Config, 'meta' | 'worker' | 'workers' | 'redact'>,
  env: NodeJS.ProcessEnv,
): { values: (string | undefined)[]; patterns: string[] } {
  return {
    values: [
      env[config.meta.apiKeyEnv],
      ...configuredWorkers(config).map((profile) => env[profile.apiKeyEnv]),
    ],
    patterns: config.redact.patterns,
  };
}

/** As many characters as a secret had: `[REDACTED]` padded with `*`, or only `*` when it was shorter. */
function maskOf(length: number): string {
  return length < REDACTED.length ? '*'.repeat(length) : REDACTED.padEnd(length, '*');
}

/** The redaction point: add secrets as they become known; {@link redact} always uses all of them. */
export class Redaction {
  private values: string[] = [];
  private readonly patterns: RegExp[] = [...BUILTIN_PATTERNS];
  private readonly patternSources = new Set<string>();

  constructor(secretValues: readonly (string | undefined)[] = [], patterns: readonly string[] = []) {
    this.add(secretValues, patterns);
  }

  /** Adds secret values (exact strings) and patterns (regular expressions, as `redact.patterns`). */
  add(secretValues: readonly (string | undefined)[], patterns: readonly string[] = []): this {
    const values = new Set(this.values);
    for (const value of secretValues) if (value && value.length >= MIN_SECRET_LENGTH) values.add(value);
    // Longest first, so a secret that contains another is replaced whole.
    this.values = [...values].sort((a, b) => b.length - a.length);
    for (const pattern of patterns) {
      if (this.patternSources.has(pattern)) continue;
      this.patternSources.add(pattern);
      this.patterns.push(new RegExp(pattern, 'g'));
    }
    return this;
  }

  /** Text with every secret value and pattern match replaced by `[REDACTED]`. */
  readonly redact: Redactor = (text) => {
    let out = text;
    for (const value of this.values) out = out.split(value).join(REDACTED);
    for (const pattern of this.patterns) out = out.replace(pattern, REDACTED);
    return out;
  };

  /**
   * The text with every secret value and pattern match masked in place by as many characters (`[REDACTED]`
   * cut or padded with `*`): for binary files, whose layout must not move (a database's pages, its
   * write-ahead log's frames), so a worker's state stays readable by the worker.
   */
  readonly mask: Redactor = (text) => {
    let out = text;
    for (const value of this.values) out = out.split(value).join(maskOf(value.length));
    for (const pattern of this.patterns) out = out.replace(pattern, (match) => maskOf(match.length));
    return out;
  };

  /** A copy of a JSON-like value with every string (keys included) redacted. */
  value<T>(value: T): T {
    return redactValue(value, this.redact);
  }

  /**
   * Text that may be JSON (a `--json` line, a journal line): when it parses, every string inside is redacted
   * and the result is still valid JSON (a secret escaped by JSON is caught too); any other text is redacted
   * as text.
   */
  readonly redactJsonText: Redactor = (text) => {
    const trimmed = text.trim();
    if (!(trimmed.startsWith('{') || trimmed.startsWith('['))) return this.redact(text);
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      return this.redact(text);
    }
    const redacted = this.value(parsed);
    if (JSON.stringify(redacted) === JSON.stringify(parsed)) return text;
    // Keep the layout: pretty-printed JSON (plan --json) stays pretty.
    const indent = /^[{[]\n( +)/.exec(trimmed)?.[1]?.length;
    const trailing = text.endsWith('\n') ? '\n' : '';
    return `${JSON.stringify(redacted, null, indent)}${trailing}`;
  };
}

/** A copy of a JSON-like value with every string (keys included) passed through `redact`. */
export function redactValue<T>(value: T, redact: Redactor): T {
  return redactDeep(value, redact) as T;
}

function redactDeep(value: unknown, redact: Redactor): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, redact));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[redact(key)] = redactDeep(item, redact);
    return out;
  }
  return value;
}

/** A redactor for these secret values and patterns (a new, separate {@link Redaction}). */
export function createRedactor(
  secretValues: readonly (string | undefined)[],
  patterns: readonly string[] = [],
): Redactor {
  return new Redaction(secretValues, patterns).redact;
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
