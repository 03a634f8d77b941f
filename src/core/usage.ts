/** Token and cost arithmetic. Prices are USD per million tokens. */
import type { TokenUsage } from './ports.js';
import type { Usage } from './types.js';

export interface PriceTable {
  [model: string]: { input: number; cachedInput?: number; output: number };
}

export const ZERO_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  cachedInputTokens: 0,
  outputTokens: 0,
  reasoningTokens: 0,
  costUsd: 0,
});

/** Cost of `usage` under `model`'s price; 0 when the model has no price (shown as such in the note). */
export function costOf(usage: TokenUsage, model: string, prices: PriceTable): number {
  return costAt(usage, prices[model]);
}

/** Cost of `usage` at `price` (USD per million tokens); 0 without a price. */
export function costAt(usage: TokenUsage, price: PriceTable[string] | undefined): number {
  if (!price) return 0;
  const cached = Math.min(usage.cachedInputTokens, usage.inputTokens);
  const uncached = usage.inputTokens - cached;
  // Reasoning tokens are billed as output and already counted in outputTokens by both APIs.
  return (
    (uncached * price.input +
      cached * (price.cachedInput ?? price.input) +
      usage.outputTokens * price.output) /
    1_000_000
  );
}

export const ZERO_TOKEN_USAGE: TokenUsage = Object.freeze({
  inputTokens: 0,
  cachedInputTokens: 0,
  outputTokens: 0,
  reasoningTokens: 0,
});

/** Tokens of two calls together. */
export function addTokenUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
  };
}

/** What a usage spends from a budget: its tokens (input + output) and its cost. */
export function spentOf(usage: Usage): { tokens: number; costUsd: number } {
  return { tokens: totalTokens(usage), costUsd: usage.costUsd };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return { ...addTokenUsage(a, b), costUsd: a.costUsd + b.costUsd };
}

/** `a` without `b` (what was metered during a run, once the run's own usage replaces it). */
export function subtractUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens - b.inputTokens,
    cachedInputTokens: a.cachedInputTokens - b.cachedInputTokens,
    outputTokens: a.outputTokens - b.outputTokens,
    reasoningTokens: a.reasoningTokens - b.reasoningTokens,
    costUsd: a.costUsd - b.costUsd,
  };
}

export function totalTokens(usage: TokenUsage): number {
  return usage.inputTokens + usage.outputTokens;
}
