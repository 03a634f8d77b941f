import type { Usage } from '../core/types.js';

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

export interface MetaCompletion {
  text: string;
  /** Tokens and cost of the call: the one usage type of the whole program (cost 0 when not priced). */
  usage: Usage;
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
