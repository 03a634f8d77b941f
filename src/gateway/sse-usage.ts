/**
 * Token usage of Responses API calls as they stream through the gateway. Only `response.completed` carries
 * usage; the stream itself is never changed, the meter reads a copy of each chunk.
 */
import type { TokenUsage } from '../core/ports.js';
import { addTokenUsage, ZERO_TOKEN_USAGE } from '../core/usage.js';

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

/** The Responses API `usage` object as a TokenUsage (missing fields count 0). */
export function responsesUsage(usage: unknown): TokenUsage | null {
  if (typeof usage !== 'object' || usage === null) return null;
  const value = usage as Record<string, unknown>;
  const inputDetails = (value.input_tokens_details ?? {}) as Record<string, unknown>;
  const outputDetails = (value.output_tokens_details ?? {}) as Record<string, unknown>;
  return {
    inputTokens: count(value.input_tokens),
    cachedInputTokens: count(inputDetails.cached_tokens),
    outputTokens: count(value.output_tokens),
    reasoningTokens: count(outputDetails.reasoning_tokens),
  };
}

/** Reads SSE `data:` lines of one response and keeps the usage of its `response.completed` event. */
export class ResponsesUsageMeter {
  private pending = '';
  private found: TokenUsage | null = null;

  push(chunk: Buffer | string): void {
    this.pending += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    let newline = this.pending.indexOf('\n');
    while (newline !== -1) {
      this.line(this.pending.slice(0, newline).replace(/\r$/, ''));
      this.pending = this.pending.slice(newline + 1);
      newline = this.pending.indexOf('\n');
    }
  }

  /** The usage seen, or null (a failed or cut stream). */
  end(): TokenUsage | null {
    if (this.pending !== '') this.line(this.pending);
    this.pending = '';
    return this.found;
  }

  private line(line: string): void {
    if (!line.startsWith('data:')) return;
    const data = line.slice(5).trim();
    // Cheap filter: most events are output deltas and never carry usage.
    if (!data.includes('response.completed')) return;
    try {
      const event = JSON.parse(data) as { type?: unknown; response?: { usage?: unknown } };
      if (event.type !== 'response.completed') return;
      const usage = responsesUsage(event.response?.usage);
      if (usage !== null) this.found = addTokenUsage(this.found ?? ZERO_TOKEN_USAGE, usage);
    } catch {
      // Not JSON: not ours to judge, the worker sees the stream unchanged.
    }
  }
}
