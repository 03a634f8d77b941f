/**
 * Token usage of worker calls as they stream through the gateway, per protocol. The stream itself is never
 * changed: a meter reads a copy of each chunk.
 * - Responses API: only `response.completed` carries usage.
 * - Anthropic Messages API: `message_start` carries the input side (input, cache creation, cache reads) and
 *   each `message_delta` the output tokens so far (cumulative), so the last one counts. Input tokens are
 *   counted as the three input fields together, cache reads as cached input, as the Responses API counts.
 * - Gemini API: every chunk's `usageMetadata` is the response's total so far.
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

/** A meter of one streamed response. */
export interface UsageMeter {
  push(chunk: Buffer | string): void;
  /** The usage seen, or null (a failed or cut stream). */
  end(): TokenUsage | null;
}

/** The meter for a worker's protocol. */
export function usageMeter(protocol: 'responses' | 'anthropic' | 'gemini'): UsageMeter {
  if (protocol === 'anthropic') return new AnthropicUsageMeter();
  if (protocol === 'gemini') return new GeminiUsageMeter();
  return new ResponsesUsageMeter();
}

/** The Anthropic `usage` object of `message_start` as a TokenUsage (output counted later). */
export function anthropicUsage(usage: unknown): TokenUsage | null {
  if (typeof usage !== 'object' || usage === null) return null;
  const value = usage as Record<string, unknown>;
  const cached = count(value.cache_read_input_tokens);
  return {
    inputTokens: count(value.input_tokens) + count(value.cache_creation_input_tokens) + cached,
    cachedInputTokens: cached,
    outputTokens: count(value.output_tokens),
    reasoningTokens: 0,
  };
}

/** Reads SSE `data:` lines line by line; subclasses look at each JSON payload. */
abstract class SseLineMeter implements UsageMeter {
  private pending = '';

  push(chunk: Buffer | string): void {
    this.pending += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    let newline = this.pending.indexOf('\n');
    while (newline !== -1) {
      this.line(this.pending.slice(0, newline).replace(/\r$/, ''));
      this.pending = this.pending.slice(newline + 1);
      newline = this.pending.indexOf('\n');
    }
  }

  end(): TokenUsage | null {
    if (this.pending !== '') this.line(this.pending);
    this.pending = '';
    return this.result();
  }

  protected abstract data(data: string): void;
  protected abstract result(): TokenUsage | null;

  private line(line: string): void {
    if (line.startsWith('data:')) this.data(line.slice(5).trim());
  }
}

/** Sums the messages of one Anthropic stream (one message per response; several are added up). */
export class AnthropicUsageMeter extends SseLineMeter {
  private done: TokenUsage | null = null;
  private current: TokenUsage | null = null;

  protected data(data: string): void {
    // Cheap filter: most events are content deltas and never carry usage.
    if (!data.includes('usage')) return;
    try {
      const event = JSON.parse(data) as {
        type?: unknown;
        message?: { usage?: unknown };
        usage?: { output_tokens?: unknown };
      };
      if (event.type === 'message_start') {
        this.close();
        this.current = anthropicUsage(event.message?.usage);
      } else if (event.type === 'message_delta' && this.current !== null && event.usage) {
        this.current = { ...this.current, outputTokens: count(event.usage.output_tokens) };
      }
    } catch {
      // Not JSON: not ours to judge, the worker sees the stream unchanged.
    }
  }

  protected result(): TokenUsage | null {
    this.close();
    return this.done;
  }

  private close(): void {
    if (this.current === null) return;
    this.done = addTokenUsage(this.done ?? ZERO_TOKEN_USAGE, this.current);
    this.current = null;
  }
}

/** Keeps the usage of the `response.completed` events of a Responses API stream. */
export class ResponsesUsageMeter extends SseLineMeter {
  private found: TokenUsage | null = null;

  protected data(data: string): void {
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

  protected result(): TokenUsage | null {
    return this.found;
  }
}

/**
 * The Gemini API's `usageMetadata` as a TokenUsage: the prompt (cached content included) as input, the
 * candidates and the thoughts as output (thoughts also as reasoning, as the Responses API counts them).
 */
export function geminiUsage(usage: unknown): TokenUsage | null {
  if (typeof usage !== 'object' || usage === null) return null;
  const value = usage as Record<string, unknown>;
  const thoughts = count(value.thoughtsTokenCount);
  return {
    inputTokens: count(value.promptTokenCount),
    cachedInputTokens: count(value.cachedContentTokenCount),
    outputTokens: count(value.candidatesTokenCount) + thoughts,
    reasoningTokens: thoughts,
  };
}

/** One response of `streamGenerateContent?alt=sse`: each chunk's `usageMetadata` is the total so far; the last counts. */
export class GeminiUsageMeter extends SseLineMeter {
  private last: TokenUsage | null = null;

  protected data(data: string): void {
    if (!data.includes('usageMetadata')) return;
    try {
      const chunk = JSON.parse(data) as { usageMetadata?: unknown };
      this.last = geminiUsage(chunk.usageMetadata) ?? this.last;
    } catch {
      // Not JSON: not ours to judge, the worker sees the stream unchanged.
    }
  }

  protected result(): TokenUsage | null {
    return this.last;
  }
}
