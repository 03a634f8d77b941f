/**
 * The `MetaModel` port: the one thing the Meta-agent needs from an LLM. No library type appears here, so
 * the OpenAI adapter, the scripted test fake and any future provider are interchangeable.
 */

/** One chat message sent to the model. */
export interface MetaMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface MetaCompletionOptions {
  signal?: AbortSignal;
  /** A label for logs and errors, e.g. `next_action`. */
  purpose?: string;
}

/** Tokens and cost of one model call. `costUsd` is null when no price is configured for the model. */
export interface MetaUsage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from the provider's prompt cache (a subset of promptTokens). */
  cachedTokens: number;
  costUsd: number | null;
}

export interface MetaCompletion {
  text: string;
  usage: MetaUsage;
  /** The model that answered, as the provider reports it. */
  model: string;
  durationMs: number;
}

export interface MetaModel {
  /** The configured model name (used for prices and logs). */
  readonly model: string;
  /**
   * Sends the conversation and returns the reply text. Throws ModelBehaviorError with code
   * `model_unreachable`, `model_timeout` or `model_http_error` when no reply can be had.
   */
  complete(messages: readonly MetaMessage[], options?: MetaCompletionOptions): Promise<MetaCompletion>;
}

/** A zero usage, the neutral element of `addUsage`. */
export const ZERO_USAGE: MetaUsage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0, costUsd: null };

/** Sums two usages; the cost stays null only when both are null. */
export function addUsage(left: MetaUsage, right: MetaUsage): MetaUsage {
  return {
    promptTokens: left.promptTokens + right.promptTokens,
    completionTokens: left.completionTokens + right.completionTokens,
    cachedTokens: left.cachedTokens + right.cachedTokens,
    costUsd:
      left.costUsd === null && right.costUsd === null ? null : (left.costUsd ?? 0) + (right.costUsd ?? 0),
  };
}

/** Prices are USD per million tokens; cached prompt tokens use `cachedInput` when it is set. */
export function costOf(
  usage: Pick<MetaUsage, 'promptTokens' | 'completionTokens' | 'cachedTokens'>,
  price: { input: number; cachedInput?: number; output: number } | undefined,
): number | null {
  if (!price) return null;
  const uncached = Math.max(0, usage.promptTokens - usage.cachedTokens);
  const cachedPrice = price.cachedInput ?? price.input;
  return (
    (uncached * price.input + usage.cachedTokens * cachedPrice + usage.completionTokens * price.output) /
    1_000_000
  );
}
