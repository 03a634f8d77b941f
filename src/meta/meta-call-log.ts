/**
 * Writes every Meta-agent call to the run's log directory, one file per model call, so a person can read
 * exactly what was sent and what came back: `<logDir>/0003-next_action-attempt2.md`. Prompts carry the
 * worker's text (commands, messages, commit subjects): every message, reply, protocol error and error is in a
 * fenced block, and terminal controls are shown as escapes (`\x1b`), so reading a log with `cat` or a Markdown
 * viewer shows it and obeys nothing in it.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Usage } from '../core/types.js';
import { showControls } from '../notes/terminal-text.js';
import type { MetaMessage } from './meta-model.js';

export interface MetaCallLogEntry {
  purpose: string;
  attempt: number;
  maxAttempts: number;
  model: string;
  messages: readonly MetaMessage[];
  reply?: string;
  usage?: Usage;
  durationMs?: number;
  issues?: string[];
  error?: string;
  reductions?: string[];
  estimatedTokens?: number;
}

function fenced(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((match) => match[0].length));
  const marker = '`'.repeat(longest + 1);
  return `${marker}\n${text.replace(/\n+$/, '')}\n${marker}`;
}

/** A sequence of call files in one directory; numbering continues after files already there. */
export class MetaCallLog {
  readonly directory: string;
  #next: number | undefined;

  constructor(
    directory: string,
    private readonly redact: (text: string) => string = (text) => text,
  ) {
    this.directory = directory;
  }

  async #sequence(): Promise<number> {
    if (this.#next === undefined) {
      await mkdir(this.directory, { recursive: true });
      const existing = (await readdir(this.directory))
        .map((name) => /^(\d{4,})-/.exec(name)?.[1])
        .filter((value): value is string => value !== undefined)
        .map(Number);
      this.#next = Math.max(0, ...existing) + 1;
    }
    const value = this.#next;
    this.#next += 1;
    return value;
  }

  /** Writes one call; returns the file path. */
  async write(entry: MetaCallLogEntry): Promise<string> {
    const sequence = String(await this.#sequence()).padStart(4, '0');
    const file = path.join(this.directory, `${sequence}-${entry.purpose}-attempt${entry.attempt}.md`);
    const lines = [
      `# ${entry.purpose}, attempt ${entry.attempt} of ${entry.maxAttempts}`,
      '',
      `- model: ${entry.model}`,
      `- at: ${new Date().toISOString()}`,
    ];
    if (entry.estimatedTokens !== undefined)
      lines.push(`- estimated prompt tokens: ${entry.estimatedTokens}`);
    if (entry.reductions?.length) lines.push(`- reduced to fit the budget: ${entry.reductions.join(', ')}`);
    if (entry.usage)
      lines.push(
        `- usage: input ${entry.usage.inputTokens} (cached ${entry.usage.cachedInputTokens}), output ${entry.usage.outputTokens}, cost ${entry.usage.costUsd === 0 ? 'not priced' : `$${entry.usage.costUsd.toFixed(6)}`}`,
      );
    if (entry.durationMs !== undefined) lines.push(`- duration: ${entry.durationMs} ms`);
    for (const message of entry.messages) lines.push('', `## ${message.role}`, '', fenced(message.content));
    if (entry.reply !== undefined) lines.push('', '## reply', '', fenced(entry.reply));
    if (entry.issues?.length)
      lines.push('', '## protocol errors', '', fenced(entry.issues.map((issue) => `- ${issue}`).join('\n')));
    if (entry.error) lines.push('', '## error', '', fenced(entry.error));
    await writeFile(file, showControls(this.redact(`${lines.join('\n')}\n`)), 'utf8');
    return file;
  }

  /** Keeps the raw replies of a call that stayed invalid, verbatim but for terminal controls, to inspect. */
  async writeRawReplies(purpose: string, replies: readonly string[]): Promise<string> {
    const sequence = String(await this.#sequence()).padStart(4, '0');
    const file = path.join(this.directory, `${sequence}-${purpose}-protocol-invalid.txt`);
    const body = replies
      .map((reply, index) => `===== reply ${index + 1} of ${replies.length} =====\n${reply}\n`)
      .join('\n');
    await writeFile(file, showControls(this.redact(body)), 'utf8');
    return file;
  }
}
