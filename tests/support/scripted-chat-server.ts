/**
 * A scripted OpenAI-compatible Chat Completions server on loopback, so the real `openai` SDK runs its real
 * HTTP path in tests. Each POST /v1/chat/completions consumes the next scripted step: a reply (streamed as
 * SSE when the request asks for `stream: true`), an HTTP status with headers (e.g. 429 + Retry-After), or a
 * hang (the request is held open until the server closes). Every request is recorded. A request past the
 * end of the script gets a 500 that says so, and is recorded too.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ChatStep = (
  | { reply: string; usage?: { prompt_tokens?: number; completion_tokens?: number; cached_tokens?: number } }
  | { status: number; headers?: Record<string, string>; body?: unknown }
  | { hang: true }
  /** Sends 200 and the start of a body, then stalls until the server closes. */
  | { stall: true }
) & {
  /**
   * Only for a request whose messages contain this text (e.g. a subtask's task id), or every one of these
   * texts: concurrent tasks then each get their own steps in their own order, and calls of one task that may
   * overlap (an assessment and an early review) each get theirs. A request takes the first unconsumed step it
   * matches.
   */
  match?: string | readonly string[];
  /** Answered this long after the request arrived: a model that takes its time. */
  delayMs?: number;
  /**
   * Held until `count` requests for steps of the same `name` have arrived, then all answered at once: calls
   * of concurrent tasks that must come back together, whatever their order of arrival.
   */
  together?: { name: string; count: number };
};

export interface RecordedChatRequest {
  at: number;
  path: string;
  headers: IncomingMessage['headers'];
  body: {
    model?: string;
    stream?: boolean;
    messages?: { role: string; content: string }[];
    [key: string]: unknown;
  };
}

export interface ScriptedChatServer {
  /** Base URL including `/v1`, to give to the SDK or OPENAI_BASE_URL. */
  url: string;
  requests: RecordedChatRequest[];
  /** Steps not consumed yet. */
  remaining(): number;
  /** Appends steps to the script. */
  push(...steps: ChatStep[]): void;
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

function completion(model: string, text: string, step: Extract<ChatStep, { reply: string }>) {
  const prompt = step.usage?.prompt_tokens ?? 100;
  const output = step.usage?.completion_tokens ?? Math.ceil(text.length / 4);
  return {
    usage: {
      prompt_tokens: prompt,
      completion_tokens: output,
      total_tokens: prompt + output,
      prompt_tokens_details: { cached_tokens: step.usage?.cached_tokens ?? 0 },
    },
    model,
  };
}

function reply(
  response: ServerResponse,
  body: RecordedChatRequest['body'],
  step: Extract<ChatStep, { reply: string }>,
) {
  const model = body.model ?? 'scripted';
  const created = Math.floor(Date.now() / 1000);
  const { usage } = completion(model, step.reply, step);
  if (!body.stream) {
    sendJson(response, 200, {
      id: 'chatcmpl-scripted',
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: step.reply }, finish_reason: 'stop' }],
      usage,
    });
    return;
  }
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (
    delta: Record<string, unknown>,
    finish: string | null,
    extra: Record<string, unknown> = {},
  ) =>
    response.write(
      `data: ${JSON.stringify({ id: 'chatcmpl-scripted', object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
    );
  chunk({ role: 'assistant', content: '' }, null);
  // Split the reply so clients really reassemble a stream.
  for (let index = 0; index < step.reply.length; index += 16)
    chunk({ content: step.reply.slice(index, index + 16) }, null);
  chunk({}, 'stop');
  const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
  if (streamOptions?.include_usage)
    response.write(
      `data: ${JSON.stringify({ id: 'chatcmpl-scripted', object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
    );
  response.end('data: [DONE]\n\n');
}

/** Starts the server on 127.0.0.1 with a free port. */
export async function startScriptedChatServer(script: readonly ChatStep[] = []): Promise<ScriptedChatServer> {
  const steps = [...script];
  const consumed = new Set<number>();
  let next = 0;
  const requests: RecordedChatRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const groups = new Map<string, { arrived: number; release: () => void; released: Promise<void> }>();
  const together = async (name: string, count: number) => {
    let group = groups.get(name);
    if (!group) {
      let release = () => {};
      const released = new Promise<void>((resolve) => (release = resolve));
      group = { arrived: 0, release, released };
      groups.set(name, group);
    }
    group.arrived += 1;
    if (group.arrived >= count) group.release();
    await group.released;
  };

  const server = createServer((request, response) => {
    void (async () => {
      const raw = await readBody(request);
      let body: RecordedChatRequest['body'] = {};
      try {
        body = raw ? (JSON.parse(raw) as RecordedChatRequest['body']) : {};
      } catch {
        sendJson(response, 400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
        return;
      }
      const path = request.url ?? '';
      requests.push({ at: Date.now(), path, headers: request.headers, body });
      if (request.method !== 'POST' || !path.endsWith('/chat/completions')) {
        sendJson(response, 404, {
          error: { message: `no route ${request.method} ${path}`, type: 'not_found' },
        });
        return;
      }
      const text = JSON.stringify(body.messages ?? []);
      const index = steps.findIndex(
        (candidate, position) =>
          !consumed.has(position) &&
          (candidate.match === undefined ||
            (typeof candidate.match === 'string' ? [candidate.match] : candidate.match).every((part) =>
              text.includes(part),
            )),
      );
      const step = index === -1 ? undefined : steps[index];
      if (index !== -1) consumed.add(index);
      next += 1;
      if (step?.together) await together(step.together.name, step.together.count);
      if (step?.delayMs) await new Promise((resolve) => setTimeout(resolve, step.delayMs));
      if (step === undefined) {
        sendJson(response, 500, {
          error: {
            message: `scripted server: request ${next} is past the end of the script`,
            type: 'script_exhausted',
          },
        });
      } else if ('hang' in step || 'stall' in step) {
        if ('stall' in step) {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.write('{"id": "chatcmpl-stalled", ');
        }
        hanging.add(response);
        response.on('close', () => hanging.delete(response));
      } else if ('status' in step) {
        sendJson(
          response,
          step.status,
          step.body ?? { error: { message: `scripted status ${step.status}`, type: 'scripted_error' } },
          step.headers,
        );
      } else {
        reply(response, body, step);
      }
    })();
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    remaining: () => Math.max(0, steps.length - consumed.size),
    push: (...more) => steps.push(...more),
    close: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
