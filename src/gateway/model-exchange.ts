/**
 * One model exchange the gateway admitted: answered from the cassette under replay, or forwarded to the
 * upstream with the real key, its reply streamed back unchanged, the worker's usage read from a copy of the
 * stream, and the exchange recorded (redacted) when a cassette is being written.
 */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TokenUsage } from '../core/ports.js';
import type { Redactor } from '../notes/redact.js';
import {
  ReplayDivergenceError,
  type CassetteExchange,
  type CassettePlayer,
  type CassetteRecorder,
  type ExchangeKind,
} from './cassette.js';
import { jsonError } from './gateway-refusals.js';
import type { GatewayUpstream, GatewayWorker } from './gateway-options.js';
import { forwardableHeaders, joinUrl, sendUpstream } from './http-forward.js';
import { askChatUsage, usageMeter, type UsageMeter } from './sse-usage.js';

/** Every header a worker may carry its key (the per-task token) in; none of them goes upstream as sent. */
export const KEY_HEADERS = ['authorization', 'x-api-key', 'x-goog-api-key'] as const;

/** An admitted request: its route, its number on that route (from 0), and what it asks for. */
export interface ModelExchange {
  kind: ExchangeKind;
  index: number;
  method: string;
  /** The allowed route's own path, never the text the client sent. */
  subPath: string;
  body: Buffer;
  /** The worker it came from (worker exchanges): its protocol, key header and priced model. */
  worker?: GatewayWorker;
}

function meterOf(exchange: ModelExchange): UsageMeter | null {
  return exchange.kind === 'worker' ? usageMeter(exchange.worker?.protocol ?? 'responses') : null;
}

/** What an exchange needs from its gateway. */
export interface ExchangeContext {
  /** Aborted when the gateway closes. */
  closing: AbortSignal;
  redact: Redactor;
  log(line: string): void;
  /** The request has left for its upstream. */
  onSent(kind: ExchangeKind): void;
  /** A worker response's usage, read from the stream, and the model it is priced at. */
  meterWorker(usage: TokenUsage, model?: string): void;
  /** Under record: where the exchange is written. */
  recorder: CassetteRecorder | null;
  /** Under replay: a request that does not match the cassette. */
  onDivergence(error: ReplayDivergenceError): void;
  /** The upstream's answer to a worker request: its status and, for an error, the start of its body. */
  onWorkerAnswer?(answer: WorkerAnswer): void;
}

/** How the worker's upstream answered its latest request. */
export interface WorkerAnswer {
  worker: string;
  /** The worker's upstream, model and key variable, for the message that names the fix. */
  upstream: string;
  model?: string;
  apiKeyEnv?: string;
  status: number;
  /** The start of an error's body (redacted); empty for a success. */
  detail: string;
}

const ERROR_DETAIL_BYTES = 2_000;

/** Answers an exchange from the cassette; one that does not match gets HTTP 400 naming the divergence. */
export function replayExchange(
  player: CassettePlayer,
  exchange: ModelExchange,
  response: ServerResponse,
  context: ExchangeContext,
): void {
  const { kind, method, subPath, body } = exchange;
  let recorded: CassetteExchange;
  try {
    recorded = player.match(kind, method, subPath, context.redact(body.toString('utf8')));
  } catch (error) {
    if (!(error instanceof ReplayDivergenceError)) throw error;
    context.onDivergence(error);
    // 400: neither codex nor the SDK retries it, and both show its message.
    jsonError(response, 400, error.message, 'replay_diverged');
    return;
  }
  response.writeHead(recorded.response.status, { 'content-type': recorded.response.contentType });
  const meter = meterOf(exchange);
  if (meter !== null) {
    meter.push(recorded.response.body);
    const usage = meter.end();
    if (usage !== null) context.meterWorker(usage, exchange.worker?.model);
  }
  // Event by event, so a streaming client sees the shape it saw when it was recorded.
  for (const event of recorded.response.body.split(/(?<=\n\n)/)) response.write(event);
  response.end();
}

/** Sends an exchange to its upstream with the real key; an unreachable upstream gets HTTP 502. */
export async function forwardExchange(
  upstreamConfig: GatewayUpstream,
  exchange: ModelExchange,
  request: IncomingMessage,
  response: ServerResponse,
  context: ExchangeContext,
): Promise<void> {
  const { kind, index, method, subPath } = exchange;
  const url = joinUrl(upstreamConfig.baseUrl, subPath);
  // Chat Completions states a stream's usage only when asked: the gateway asks, whatever the worker sent.
  const body = exchange.worker?.protocol === 'chat' ? askChatUsage(exchange.body) : exchange.body;
  const headers = forwardableHeaders(request.headers, [...KEY_HEADERS, 'accept-encoding']);
  // Identity encoding: the meter and the cassette read the bytes that pass.
  headers['accept-encoding'] = 'identity';
  if (upstreamConfig.apiKey !== undefined) {
    const keyHeader = exchange.worker?.keyHeader ?? 'authorization';
    if (keyHeader === 'authorization') headers.authorization = `Bearer ${upstreamConfig.apiKey}`;
    else headers[keyHeader] = upstreamConfig.apiKey;
  }
  const started = performance.now();
  let upstream: IncomingMessage;
  // Ends the upstream request when the task's gateway closes or the client gave up (an SDK timeout).
  const abandoned = new AbortController();
  const onClientGone = () => {
    if (!response.writableFinished) abandoned.abort();
  };
  response.on('close', onClientGone);
  try {
    upstream = await sendUpstream(
      url,
      method,
      headers,
      body,
      AbortSignal.any([context.closing, abandoned.signal]),
      undefined,
      () => context.onSent(kind),
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    context.log(`${kind} #${index + 1} ${method} ${subPath}: upstream ${url.origin} unreachable: ${message}`);
    jsonError(
      response,
      502,
      `agent-runner gateway: upstream ${url.origin} unreachable: ${message}`,
      'upstream_unreachable',
    );
    return;
  }
  await relayUpstream(upstream, exchange, response, context, started);
}

/** Streams the upstream's reply back unchanged, then meters, logs and records the exchange. */
async function relayUpstream(
  upstream: IncomingMessage,
  exchange: ModelExchange,
  response: ServerResponse,
  context: ExchangeContext,
  started: number,
): Promise<void> {
  const { kind, index, method, subPath, body } = exchange;
  const status = upstream.statusCode ?? 502;
  response.writeHead(status, forwardableHeaders(upstream.headers));
  response.flushHeaders();
  const meter = meterOf(exchange);
  const copy: Buffer[] = [];
  response.on('close', () => upstream.destroy());
  let errorDetail = '';
  for await (const chunk of upstream) {
    const buffer = chunk as Buffer;
    meter?.push(buffer);
    if (context.recorder !== null) copy.push(buffer);
    if (status >= 400 && errorDetail.length < ERROR_DETAIL_BYTES)
      errorDetail += buffer.toString('utf8').slice(0, ERROR_DETAIL_BYTES - errorDetail.length);
    // Backpressure: a worker that does not read its answer stops the upstream, not the runner's memory.
    if (!response.write(buffer) && !response.destroyed)
      await Promise.race(
        [once(response, 'drain'), once(response, 'close')].map((wait) => wait.catch(() => undefined)),
      );
    if (response.destroyed) break;
  }
  response.end();
  const usage = meter?.end() ?? null;
  if (usage !== null) context.meterWorker(usage, exchange.worker?.model);
  if (kind === 'worker')
    context.onWorkerAnswer?.({
      worker: exchange.worker?.type ?? 'codex',
      upstream: exchange.worker?.upstream.baseUrl ?? '',
      ...(exchange.worker?.model ? { model: exchange.worker.model } : {}),
      ...(exchange.worker?.apiKeyEnv ? { apiKeyEnv: exchange.worker.apiKeyEnv } : {}),
      status,
      detail: context.redact(errorDetail),
    });
  context.log(
    `${kind} #${index + 1} ${method} ${subPath} -> ${status} in ${Math.round(performance.now() - started)} ms`,
  );
  await context.recorder?.add({
    kind,
    index,
    method,
    path: subPath,
    requestText: body.toString('utf8'),
    response: {
      status,
      contentType: String(upstream.headers['content-type'] ?? ''),
      body: Buffer.concat(copy).toString('utf8'),
    },
  });
}
