/**
 * A scripted OpenAI Responses API server for running the real codex binary in tests. `POST /v1/responses`
 * answers with the next scripted reply as data-only SSE (what codex 0.169.0 needs: `response.output_item.done`
 * items, then `response.completed`), records every request (headers and JSON body) so tests can assert the
 * history codex sent, and answers 500 "script exhausted" past the end of its script. `POST
 * /v1/chat/completions` takes the same script as streamed Chat Completions, as documented: `chat.completion.chunk`
 * deltas (the text, or `tool_calls` with each call's id, name and arguments), a `finish_reason`, the usage in a
 * last chunk with no choices only when `stream_options.include_usage` asks for it, then `data: [DONE]`. It listens on 0.0.0.0 so
 * containers reach it through `host.docker.internal` (ExtraHosts `host.docker.internal:host-gateway`).
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedUsage {
  inputTokens: number;
  cachedTokens?: number;
  outputTokens: number;
  reasoningTokens?: number;
}

/** One output item of a response, as the Responses API streams it in `response.output_item.done`. */
export type ResponseOutputItem = Record<string, unknown>;

export type ScriptedReply =
  /** A streamed response: these output items, then `response.completed` with the usage. */
  (
    | { kind: 'output'; items: ResponseOutputItem[]; usage?: ScriptedUsage }
    /** A stream that ends in `response.failed` (codex retries it `stream_max_retries` times). */
    | { kind: 'failed'; code: string; message: string }
    /** An HTTP error with an OpenAI-style JSON error body. */
    | { kind: 'http_error'; status: number; message: string }
    /** Headers are never sent: the request stays open until the server closes. */
    | { kind: 'hang' }
  ) & {
    /**
     * Only for a request whose body contains this text (e.g. a subtask's branch name in the worker prompt):
     * concurrent workers each get their own replies in order. A request takes the first unconsumed match.
     */
    match?: string;
  };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, or the raw text when it is not JSON. */
  body: unknown;
  /** Index of the reply given, or null when past the script (or not a /responses call). */
  replyIndex: number | null;
}

let callCounter = 0;

/** `exec_command` with `{"cmd": ...}`: the shell tool of codex's fallback tool set. */
export function commandCall(cmd: string, callId = `call_${++callCounter}`): ResponseOutputItem {
  return { type: 'function_call', call_id: callId, name: 'exec_command', arguments: JSON.stringify({ cmd }) };
}

/** `run_shell_command` with `{"command": ...}`: Qwen Code's shell tool. */
export function shellCall(command: string, callId = `call_${++callCounter}`): ResponseOutputItem {
  return {
    type: 'function_call',
    id: `fc_${callId}`,
    call_id: callId,
    name: 'run_shell_command',
    arguments: JSON.stringify({ command }),
    status: 'completed',
  };
}

/** `bash` with `{"command": ..., "description": ...}`: OpenCode's shell tool. */
export function bashCall(command: string, callId = `call_${++callCounter}`): ResponseOutputItem {
  return {
    type: 'function_call',
    id: `fc_${callId}`,
    call_id: callId,
    name: 'bash',
    arguments: JSON.stringify({ command, description: 'a scripted command' }),
    status: 'completed',
  };
}

/** An assistant message (becomes codex's `agent_message`). */
export function assistantMessage(text: string, id = `msg_${++callCounter}`): ResponseOutputItem {
  return {
    type: 'message',
    role: 'assistant',
    id,
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}

/** A freeform apply_patch call (offered only for a model codex knows, e.g. gpt-5.5). */
export function applyPatchCall(patch: string, callId = `patch_${++callCounter}`): ResponseOutputItem {
  return { type: 'custom_tool_call', call_id: callId, name: 'apply_patch', input: patch };
}

function usageJson(usage: ScriptedUsage | undefined): Record<string, unknown> {
  const value = usage ?? { inputTokens: 100, outputTokens: 10 };
  return {
    input_tokens: value.inputTokens,
    input_tokens_details: { cached_tokens: value.cachedTokens ?? 0 },
    output_tokens: value.outputTokens,
    output_tokens_details: { reasoning_tokens: value.reasoningTokens ?? 0 },
    total_tokens: value.inputTokens + value.outputTokens,
  };
}

function sse(response: ServerResponse, data: unknown): void {
  response.write(`data: ${JSON.stringify(data)}\n\n`);
}

const isModelRoute = (path: string) => path.endsWith('/responses') || path.endsWith('/chat/completions');

/** The script's items as one streamed chat completion: text and tool calls as deltas, then the usage if asked. */
function chatStream(
  response: ServerResponse,
  id: string,
  items: ResponseOutputItem[],
  usage: ScriptedUsage | undefined,
  request: unknown,
): void {
  const { model, stream_options: options } = (request ?? {}) as {
    model?: string;
    stream_options?: { include_usage?: boolean };
  };
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    sse(response, { id, object: 'chat.completion.chunk', created: 1, model, choices, ...extra });
  chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  const calls = items.filter((item) => item.type === 'function_call');
  for (const item of items.filter((candidate) => candidate.type === 'message'))
    for (const part of item.content as { text?: unknown }[])
      if (typeof part.text === 'string')
        chunk([{ index: 0, delta: { content: part.text }, finish_reason: null }]);
  calls.forEach((call, index) =>
    chunk([
      {
        index: 0,
        delta: {
          tool_calls: [
            {
              index,
              id: call.call_id,
              type: 'function',
              function: { name: call.name, arguments: call.arguments },
            },
          ],
        },
        finish_reason: null,
      },
    ]),
  );
  chunk([{ index: 0, delta: {}, finish_reason: calls.length > 0 ? 'tool_calls' : 'stop' }]);
  if (options?.include_usage === true) {
    const value = usage ?? { inputTokens: 100, outputTokens: 10 };
    chunk([], {
      usage: {
        prompt_tokens: value.inputTokens,
        completion_tokens: value.outputTokens,
        total_tokens: value.inputTokens + value.outputTokens,
        prompt_tokens_details: { cached_tokens: value.cachedTokens ?? 0 },
        completion_tokens_details: { reasoning_tokens: value.reasoningTokens ?? 0 },
      },
    });
  }
  response.write('data: [DONE]\n\n');
  response.end();
}

export class ScriptedResponsesServer {
  readonly requests: RecordedRequest[] = [];
  private readonly server: Server;
  private readonly script: ScriptedReply[] = [];
  private readonly consumed = new Set<number>();
  private port = 0;

  constructor(script: ScriptedReply[] = []) {
    this.script.push(...script);
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () =>
        this.answer(request.method ?? '', request.url ?? '', request.headers, chunks, response),
      );
    });
  }

  /** Listens on 0.0.0.0 on a random port. */
  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '0.0.0.0', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Base URL for codex's provider as seen from `host` (e.g. `host.docker.internal`, `127.0.0.1`). */
  baseUrl(host: string): string {
    return `http://${host}:${this.port}/v1`;
  }

  get listeningPort(): number {
    return this.port;
  }

  /** Appends replies (for the next run of a test). */
  enqueue(...replies: ScriptedReply[]): void {
    this.script.push(...replies);
  }

  /** Model requests (to `/responses` or `/chat/completions`), in order. */
  responseRequests(): RecordedRequest[] {
    return this.requests.filter((request) => request.method === 'POST' && isModelRoute(request.path));
  }

  /** Throws when scripted replies were not consumed. */
  assertComplete(): void {
    if (this.consumed.size < this.script.length) {
      throw new Error(
        `scripted server: ${this.script.length - this.consumed.size} scripted replies were never requested`,
      );
    }
  }

  async close(): Promise<void> {
    // Hanging replies keep their sockets open; end them so close() returns.
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private answer(
    method: string,
    url: string,
    headers: IncomingHttpHeaders,
    chunks: Buffer[],
    response: ServerResponse,
  ): void {
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: unknown = raw;
    try {
      body = raw === '' ? null : JSON.parse(raw);
    } catch {
      // kept as text
    }
    const path = url.split('?')[0] ?? url;
    const isResponses = method === 'POST' && isModelRoute(path);
    const index = isResponses
      ? this.script.findIndex(
          (candidate, position) =>
            !this.consumed.has(position) && (candidate.match === undefined || raw.includes(candidate.match)),
        )
      : -1;
    const reply = index === -1 ? undefined : this.script[index];
    const replyIndex = reply === undefined ? null : index;
    if (reply !== undefined) this.consumed.add(index);
    this.requests.push({ method, path, headers, body, replyIndex });

    if (!isResponses) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: `no route ${method} ${path}`, type: 'not_found' } }));
      return;
    }
    if (reply === undefined) {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: { message: 'scripted server: script exhausted', type: 'server_error' } }),
      );
      return;
    }
    const responseId = `resp_${replyIndex}`;
    switch (reply.kind) {
      case 'hang':
        return;
      case 'http_error':
        response.writeHead(reply.status, { 'content-type': 'application/json' });
        // As OpenAI answers: a refused key is `invalid_request_error` / `invalid_api_key`, not a server error.
        response.end(
          JSON.stringify({
            error:
              reply.status === 401
                ? { message: reply.message, type: 'invalid_request_error', code: 'invalid_api_key' }
                : { message: reply.message, type: 'server_error', code: null },
          }),
        );
        return;
      case 'failed':
        response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        sse(response, {
          type: 'response.failed',
          response: { id: responseId, error: { code: reply.code, message: reply.message } },
        });
        response.end();
        return;
      case 'output':
        response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        if (path.endsWith('/chat/completions')) {
          chatStream(response, responseId, reply.items, reply.usage, body);
          return;
        }
        sse(response, { type: 'response.created', response: { id: responseId } });
        reply.items.forEach((item, index) => {
          // A message's text streams as the API does (added, delta, done): Qwen Code and OpenCode read those;
          // codex reads the done item.
          const content = Array.isArray(item.content) ? (item.content as { text?: unknown }[]) : [];
          const at = { item_id: item.id, output_index: index, content_index: 0 };
          for (const part of content) {
            if (typeof part.text !== 'string') continue;
            const added = { ...item, content: [], status: 'in_progress' };
            sse(response, { type: 'response.output_item.added', output_index: index, item: added });
            const empty = { type: 'output_text', text: '', annotations: [] };
            sse(response, { type: 'response.content_part.added', ...at, part: empty });
            sse(response, { type: 'response.output_text.delta', ...at, delta: part.text });
            sse(response, { type: 'response.output_text.done', ...at, text: part.text });
            const done = { type: 'output_text', text: part.text, annotations: [] };
            sse(response, { type: 'response.content_part.done', ...at, part: done });
          }
          sse(response, { type: 'response.output_item.done', output_index: index, item });
        });
        sse(response, {
          type: 'response.completed',
          response: {
            id: responseId,
            status: 'completed',
            output: reply.items,
            usage: usageJson(reply.usage),
          },
        });
        response.end();
        return;
    }
  }
}
