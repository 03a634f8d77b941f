/**
 * An honest fake of the `MetaModel` port for tests and benchmarks: it answers each call with the next
 * scripted reply, records every call, throws on a call past the end of its script, and `assertComplete()`
 * fails when scripted replies were left unused.
 */
import { InternalError } from '../errors.js';
import type { Usage } from '../core/types.js';
import type { MetaCompletion, MetaCompletionOptions, MetaMessage, MetaModel } from './meta-model.js';

/** A scripted step: a reply text (optionally with its usage), or an error to throw for that call. */
export type ScriptedStep = string | { text: string; usage?: Partial<Usage> } | { error: Error };

export interface ScriptedCall {
  messages: MetaMessage[];
  purpose?: string;
}

export class ScriptedMetaModel implements MetaModel {
  readonly model: string;
  readonly calls: ScriptedCall[] = [];
  readonly #script: ScriptedStep[];

  constructor(script: readonly ScriptedStep[], options: { model?: string } = {}) {
    this.#script = [...script];
    this.model = options.model ?? 'scripted';
  }

  /** Replies not consumed yet. */
  get remaining(): number {
    return this.#script.length - this.calls.length;
  }

  async complete(
    messages: readonly MetaMessage[],
    options: MetaCompletionOptions = {},
  ): Promise<MetaCompletion> {
    const index = this.calls.length;
    this.calls.push({ messages: messages.map((message) => ({ ...message })), purpose: options.purpose });
    const step = this.#script[index];
    if (step === undefined) {
      throw new InternalError(
        `ScriptedMetaModel: call ${index + 1} (${options.purpose ?? 'unnamed'}) is past the end of the script (${this.#script.length} replies)`,
      );
    }
    if (typeof step === 'object' && 'error' in step) throw step.error;
    const text = typeof step === 'string' ? step : step.text;
    const usage = typeof step === 'string' ? {} : (step.usage ?? {});
    return {
      text,
      model: this.model,
      durationMs: 0,
      usage: {
        // Like the real adapter, estimate from characters when the script gives no usage.
        inputTokens:
          usage.inputTokens ?? Math.ceil(messages.reduce((sum, m) => sum + m.content.length, 0) / 4),
        cachedInputTokens: usage.cachedInputTokens ?? 0,
        outputTokens: usage.outputTokens ?? Math.ceil(text.length / 4),
        reasoningTokens: usage.reasoningTokens ?? 0,
        costUsd: usage.costUsd ?? 0,
      },
    };
  }

  /** Throws when some scripted replies were never requested. */
  assertComplete(): void {
    if (this.remaining > 0) {
      throw new InternalError(
        `ScriptedMetaModel: ${this.remaining} of ${this.#script.length} scripted replies were not used`,
      );
    }
  }
}
