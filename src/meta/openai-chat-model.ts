/**
 * The `MetaModel` adapter for any OpenAI-compatible Chat Completions endpoint, built on the `openai` SDK.
 *
 * Retries are ours, not the SDK's (the SDK runs with `maxRetries: 0`): the SDK honours any Retry-After,
 * even one of an hour, with a sleep that cannot be aborted, which would make the total time unbounded.
 * Here 408/409/429/5xx are retried up to `maxRetries` times, waiting what Retry-After (or `retry-after-ms`)
 * asks when it is at most `maxRetryDelayMs`, else exponential backoff with jitter; a server asking for a
 * longer wait fails at once. Worst case: (maxRetries + 1) × timeout + maxRetries × maxRetryDelayMs.
 * Timeouts and connection failures are not retried: they say something about the endpoint the user must fix.
 */
import OpenAI from 'openai';
import type { Config, Price } from '../config/schema.js';
import { AgentRunnerError, EXIT_CODES, ModelBehaviorError, UserError } from '../errors.js';
import { costAt } from '../core/usage.js';
import type { MetaCompletion, MetaCompletionOptions, MetaMessage, MetaModel } from './meta-model.js';

export interface OpenAiChatModelOptions {
  baseUrl: string;
  /** The URL named in messages when `baseUrl` is a local relay (the gateway) to the real endpoint. */
  displayUrl?: string;
  apiKey: string;
  model: string;
  /** Per HTTP attempt. */
  timeoutMs: number;
  /** Retries after the first attempt on 408/409/429/5xx. */
  maxRetries: number;
  /** The longest Retry-After honoured; longer requests fail at once (default 60 s). */
  maxRetryDelayMs?: number;
  price?: Price;
  /** Named in error messages: the environment variable that holds the key. */
  apiKeyEnv?: string;
  /** Injected in tests to observe waits; defaults to an abortable timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The fetch the SDK uses (the SDK's own option); tests use it to simulate a DNS failure without DNS traffic. */
  fetch?: typeof fetch;
}

const RETRYABLE_STATUS = (status: number) =>
  status === 408 || status === 409 || status === 429 || status >= 500;
const UNREACHABLE_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found (DNS)',
  EAI_AGAIN: 'DNS lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
  UND_ERR_SOCKET: 'connection closed by the server',
};

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The first `code` found along an error's cause chain (undici hides ECONNREFUSED two levels deep). */
function causeCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code in UNREACHABLE_CODES) return code;
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors)) {
      const inner = errors.map(causeCode).find((found) => found !== undefined);
      if (inner) return inner;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Milliseconds asked for by `retry-after-ms` or `Retry-After` (seconds or an HTTP date), if any. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  const milliseconds = headers?.get('retry-after-ms');
  if (milliseconds && Number.isFinite(Number.parseFloat(milliseconds)))
    return Math.max(0, Number.parseFloat(milliseconds));
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function backoffMs(retry: number): number {
  const base = Math.min(500 * 2 ** retry, 8_000);
  return base * (1 - Math.random() * 0.25);
}

export class OpenAiChatModel implements MetaModel {
  readonly model: string;
  readonly #client: OpenAI;
  readonly #options: OpenAiChatModelOptions;

  constructor(options: OpenAiChatModelOptions) {
    this.model = options.model;
    this.#options = options;
    this.#client = new OpenAI({
      baseURL: options.baseUrl,
      apiKey: options.apiKey,
      timeout: options.timeoutMs,
      maxRetries: 0,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  async complete(
    messages: readonly MetaMessage[],
    options: MetaCompletionOptions = {},
  ): Promise<MetaCompletion> {
    const sleep = this.#options.sleep ?? abortableSleep;
    const maxDelay = this.#options.maxRetryDelayMs ?? 60_000;
    for (let attempt = 0; ; attempt += 1) {
      const started = Date.now();
      // The SDK's timeout stops at the response headers; this deadline also bounds reading the body,
      // so a server that sends headers and then stalls still ends in model_timeout.
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), this.#options.timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
      try {
        const response = await this.#client.chat.completions.create(
          {
            model: this.model,
            messages: messages.map((message) => ({ role: message.role, content: message.content })),
          },
          { signal, timeout: this.#options.timeoutMs, maxRetries: 0 },
        );
        const text = response.choices[0]?.message?.content ?? '';
        const usage = response.usage;
        // Some compatible servers omit usage; an estimate (chars / 4) keeps token budgets meaningful.
        const promptTokens =
          usage?.prompt_tokens ??
          Math.ceil(messages.reduce((sum, message) => sum + message.content.length, 0) / 4);
        const completionTokens = usage?.completion_tokens ?? Math.ceil(text.length / 4);
        const cachedTokens = usage?.prompt_tokens_details?.cached_tokens ?? 0;
        const tokens = {
          inputTokens: promptTokens,
          cachedInputTokens: cachedTokens,
          outputTokens: completionTokens,
          reasoningTokens: usage?.completion_tokens_details?.reasoning_tokens ?? 0,
        };
        return {
          text,
          model: response.model || this.model,
          durationMs: Date.now() - started,
          usage: {
            ...tokens,
            costUsd: costAt(tokens, this.#options.price),
          },
        };
      } catch (caught) {
        const error =
          deadline.signal.aborted && !options.signal?.aborted
            ? new OpenAI.APIConnectionTimeoutError()
            : caught;
        const delay = this.#retryDelay(error, attempt, maxDelay);
        if (delay === undefined) throw this.#translate(error, attempt, maxDelay);
        await sleep(delay, options.signal).catch(() => {
          throw this.#translate(new OpenAI.APIUserAbortError(), attempt, maxDelay);
        });
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /** How long to wait before the next attempt, or undefined when the error is final. */
  #retryDelay(error: unknown, attempt: number, maxDelay: number): number | undefined {
    if (!(error instanceof OpenAI.APIError) || error instanceof OpenAI.APIConnectionError) return undefined;
    if (error.status === undefined || !RETRYABLE_STATUS(error.status)) return undefined;
    if (attempt >= this.#options.maxRetries) return undefined;
    const asked = retryAfterMs(error.headers);
    if (asked !== undefined) return asked <= maxDelay ? asked : undefined;
    return backoffMs(attempt);
  }

  #translate(error: unknown, attempt: number, maxDelay: number): AgentRunnerError {
    const url = this.#options.displayUrl ?? this.#options.baseUrl;
    if (error instanceof OpenAI.APIUserAbortError) {
      return new AgentRunnerError(
        'interrupted',
        `The request to the Meta-agent model at ${url} was interrupted.`,
        {
          cause: error,
          exitCode: EXIT_CODES.interrupted,
        },
      );
    }
    if (error instanceof OpenAI.APIConnectionTimeoutError) {
      return new ModelBehaviorError(
        'model_timeout',
        `The Meta-agent model at ${url} did not answer within ${Math.round(this.#options.timeoutMs / 1000)}s. ` +
          'Check that the server is healthy, or raise meta.requestTimeout in agent-runner.yaml.',
        { cause: error, retryable: true, details: { baseUrl: url, timeoutMs: this.#options.timeoutMs } },
      );
    }
    if (error instanceof OpenAI.APIConnectionError) {
      const code = causeCode(error);
      const reason = code ? UNREACHABLE_CODES[code] : error.message;
      return new ModelBehaviorError(
        'model_unreachable',
        `Cannot reach the Meta-agent model at ${url} (${reason}). ` +
          'Check meta.baseUrl in agent-runner.yaml or OPENAI_BASE_URL, and that the server is running and reachable from this machine.',
        { cause: error, retryable: true, details: { baseUrl: url, code } },
      );
    }
    if (error instanceof OpenAI.APIError && error.status === 502 && error.type === 'upstream_unreachable') {
      // The gateway could not reach the real endpoint: the same failure as reaching it directly.
      const detail = error.message.replace(/^.*unreachable: /, '');
      const code = Object.keys(UNREACHABLE_CODES).find((key) => detail.includes(key));
      const reason = code
        ? UNREACHABLE_CODES[code]
        : /socket hang up/.test(detail)
          ? UNREACHABLE_CODES.UND_ERR_SOCKET
          : detail;
      return new ModelBehaviorError(
        'model_unreachable',
        `Cannot reach the Meta-agent model at ${url} (${reason}). ` +
          'Check meta.baseUrl in agent-runner.yaml or OPENAI_BASE_URL, and that the server is running and reachable from this machine.',
        { cause: error, retryable: true, details: { baseUrl: url, code } },
      );
    }
    if (error instanceof OpenAI.APIError && error.status !== undefined)
      return this.#httpError(error, error.status, attempt, maxDelay, url);
    if (error instanceof AgentRunnerError) return error;
    if (error instanceof SyntaxError) {
      return new ModelBehaviorError(
        'model_http_error',
        `The Meta-agent model at ${url} answered something that is not a Chat Completions response ` +
          `(${error.message}). Check that meta.baseUrl (or OPENAI_BASE_URL) is an OpenAI-compatible endpoint ` +
          'ending in /v1, not a web page or a proxy error page.',
        { cause: error, details: { baseUrl: url } },
      );
    }
    return new ModelBehaviorError(
      'model_http_error',
      `The request to the Meta-agent model at ${url} failed: ${String(error)}`,
      {
        cause: error,
        details: { baseUrl: url },
      },
    );
  }

  /** An HTTP error answer, with a hint at what to check or whether to try again later. */
  #httpError(
    error: InstanceType<typeof OpenAI.APIError>,
    status: number,
    attempt: number,
    maxDelay: number,
    url: string,
  ): ModelBehaviorError {
    const asked = retryAfterMs(error.headers);
    let hint = '';
    if (status === 401 || status === 403)
      hint = ` Check the API key in the environment variable ${this.#options.apiKeyEnv ?? 'OPENAI_API_KEY'}.`;
    else if (status === 404) hint = ` Check meta.model (${this.model}) and meta.baseUrl.`;
    else if (asked !== undefined && asked > maxDelay)
      hint = ` The server asked to wait ${Math.round(asked / 1000)}s, more than the ${Math.round(maxDelay / 1000)}s agent-runner waits; try again later.`;
    else if (RETRYABLE_STATUS(status))
      hint = ` Gave up after ${attempt + 1} attempt(s); try again later or raise meta.maxRetries.`;
    return new ModelBehaviorError(
      'model_http_error',
      `The Meta-agent model at ${url} answered HTTP ${status}: ${error.message.replace(/^\d+\s*/, '')}.${hint}`,
      {
        cause: error,
        retryable: RETRYABLE_STATUS(status),
        details: { baseUrl: url, status, attempts: attempt + 1 },
      },
    );
  }
}

/** Builds the adapter from the validated config; the key comes from the variable named by meta.apiKeyEnv. */
export function createOpenAiChatModel(
  config: Pick<Config, 'meta' | 'prices'>,
  env: NodeJS.ProcessEnv,
  overrides: Partial<OpenAiChatModelOptions> = {},
): OpenAiChatModel {
  const apiKey = env[config.meta.apiKeyEnv];
  if (!apiKey) {
    throw new UserError(
      'config_invalid',
      `No API key for the Meta-agent model: set the environment variable ${config.meta.apiKeyEnv} ` +
        '(meta.apiKeyEnv in agent-runner.yaml names it; any non-empty value works for a local server without auth).',
    );
  }
  return new OpenAiChatModel({
    baseUrl: config.meta.baseUrl,
    apiKey,
    model: config.meta.model,
    timeoutMs: config.meta.requestTimeout,
    maxRetries: config.meta.maxRetries,
    price: config.prices[config.meta.model],
    apiKeyEnv: config.meta.apiKeyEnv,
    ...overrides,
  });
}
