/**
 * Token usage of worker calls as they stream through the gateway, per protocol. The stream itself is never
 * changed: a meter reads a copy of each chunk.
 * - Responses API: only `response.completed` carries usage.
 * - Anthropic Messages API: `message_start` carries the input side (input, cache creation, cache reads) and
 *   each `message_delta` the output tokens so far (cumulative), so the last one counts. Input tokens are
 *   counted as the three input fields together, cache reads as cached input, as the Responses API counts.
 * - Gemini API: every chunk's `usageMetadata` is the response's total so far.
 * - Chat Completions: the chunk with `usage` (the gateway asks for it: `stream_options.include_usage`).
 * An answer that is one JSON document instead of a stream (a request with `stream: false`) is metered from its
 * own usage field: a worker cannot leave the budget by not streaming.
 */
import type { TokenUsage } from '../core/ports.js';
import { addTokenUsage, ZERO_TOKEN_USAGE } from '../core/usage.js';
import type { WorkerProtocol } from '../worker/worker-kinds.js';

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
export function usageMeter(protocol: WorkerProtocol): UsageMeter {
  if (protocol === 'anthropic') return new AnthropicUsageMeter();
  if (protocol === 'gemini') return new GeminiUsageMeter();
  if (protocol === 'chat') return new ChatUsageMeter();
  return new ResponsesUsageMeter();
}

/**
 * A streamed Chat Completions request as sent upstream: with `stream_options.include_usage` set, so its answer
 * states its usage (a worker that leaves it out, or turns it off, is still metered). Any other body as it is.
 */
export function askChatUsage(body: Buffer): Buffer {
  let request: unknown;
  try {
    request = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (typeof request !== 'object' || request === null || (request as { stream?: unknown }).stream !== true)
    return body;
  const streamOptions = (request as { stream_options?: unknown }).stream_options;
  const options = typeof streamOptions === 'object' && streamOptions !== null ? streamOptions : {};
  return Buffer.from(JSON.stringify({ ...request, stream_options: { ...options, include_usage: true } }));
}

/** Chat Completions' `usage` as a TokenUsage (reasoning tokens are part of the completion's, as sent). */
export function chatUsage(usage: unknown): TokenUsage | null {
  if (typeof usage !== 'object' || usage === null) return null;
  const value = usage as Record<string, unknown>;
  const promptDetails = (value.prompt_tokens_details ?? {}) as Record<string, unknown>;
  const completionDetails = (value.completion_tokens_details ?? {}) as Record<string, unknown>;
  return {
    inputTokens: count(value.prompt_tokens),
    cachedInputTokens: count(promptDetails.cached_tokens),
    outputTokens: count(value.completion_tokens),
    reasoningTokens: count(completionDetails.reasoning_tokens),
  };
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

/** How much of an answer that is not a stream is kept to read its usage (a model's answer is far smaller). */
const WHOLE_BODY_BYTES = 16 * 1024 ** 2;

/**
 * Reads SSE `data:` lines line by line; subclasses look at each JSON payload. An answer with no `data:` line
 * is kept (within a cap) and read as one JSON document at the end.
 */
abstract class SseLineMeter implements UsageMeter {
  private pending = '';
  private sawData = false;
  private whole: string[] = [];
  private wholeBytes = 0;

  push(chunk: Buffer | string): void {
    const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    if (!this.sawData && this.wholeBytes <= WHOLE_BODY_BYTES) {
      this.whole.push(text);
      this.wholeBytes += text.length;
    }
    this.pending += text;
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
    if (!this.sawData && this.wholeBytes <= WHOLE_BODY_BYTES) return this.document(this.whole.join(''));
    return this.result();
  }

  protected abstract data(data: string): void;
  protected abstract result(): TokenUsage | null;
  /** The usage of an answer that is one JSON document. */
  protected abstract wholeUsage(document: Record<string, unknown>): TokenUsage | null;

  private document(text: string): TokenUsage | null {
    this.whole = [];
    try {
      const parsed: unknown = JSON.parse(text);
      return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
        ? this.wholeUsage(parsed as Record<string, unknown>)
        : null;
    } catch {
      return null;
    }
  }

  private line(line: string): void {
    if (!line.startsWith('data:')) return;
    if (!this.sawData) {
      this.sawData = true;
      this.whole = [];
    }
    this.data(line.slice(5).trim());
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

  protected wholeUsage(document: Record<string, unknown>): TokenUsage | null {
    return anthropicUsage(document.usage);
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

  protected wholeUsage(document: Record<string, unknown>): TokenUsage | null {
    return responsesUsage(document.usage);
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

  protected wholeUsage(document: Record<string, unknown>): TokenUsage | null {
    return geminiUsage(document.usageMetadata);
  }
}

/**
 * One Chat Completions stream: the chunk that carries `usage` (the last, with no choices, when
 * `include_usage` is asked; some servers send a running total on every chunk: the last counts).
 */
export class ChatUsageMeter extends SseLineMeter {
  private last: TokenUsage | null = null;

  protected data(data: string): void {
    if (!data.includes('usage')) return;
    try {
      const chunk = JSON.parse(data) as { usage?: unknown };
      this.last = chatUsage(chunk.usage) ?? this.last;
    } catch {
      // Not JSON ([DONE] included): not ours to judge, the worker sees the stream unchanged.
    }
  }

  protected result(): TokenUsage | null {
    return this.last;
  }

  protected wholeUsage(document: Record<string, unknown>): TokenUsage | null {
    return chatUsage(document.usage);
  }
}
