/**
 * A scripted model served by agent-runner itself, for the demo and for trying the tool with no API key:
 * `agent-runner run --model-script FILE`. It answers the Meta-agent's Chat Completions and the workers'
 * models (codex: the Responses API; claude: the Anthropic Messages API; gemini: the Gemini API; qwen and
 * opencode: the Responses API or, under their own prefix, Chat Completions; all streamed)
 * from a YAML script, in
 * order, ignoring what was asked. With a real key and no script the same command talks to the real model.
 *
 * Script format (YAML):
 *   meta:            # Chat Completions replies, in order (constrained-YAML messages as text)
 *     - |
 *       type: plan_task
 *       ...
 *   worker:          # Responses turns, in order: a shell command for codex to run, or a final message
 *     - run: echo hello > hello.txt
 *     - message: Done.
 * `{{taskId}}` in any text is replaced by the task id, `{{workerType}}` by the default worker (`worker.type`).
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'yaml';
import * as z from 'zod';
import { formatIssues } from '../config/load.js';
import { UserError } from '../errors.js';
import {
  answerGemini,
  answerMessages,
  answerResponses,
  answerWorkerChat,
  scriptExhausted,
  sse,
  type ScriptPosition,
} from './scripted-worker-turns.js';

const scriptSchema = z.strictObject({
  meta: z.array(z.string().min(1)).min(1),
  worker: z
    .array(
      z.union([z.strictObject({ run: z.string().min(1) }), z.strictObject({ message: z.string().min(1) })]),
    )
    .default([]),
});
export type ModelScript = z.infer<typeof scriptSchema>;

export async function readModelScript(
  file: string,
  taskId: string,
  workerType = 'codex',
): Promise<ModelScript> {
  let raw: unknown;
  try {
    raw = parse(
      (await readFile(file, 'utf8'))
        .replaceAll('{{taskId}}', taskId)
        .replaceAll('{{workerType}}', workerType),
    );
  } catch (error) {
    throw new UserError(
      'usage',
      `Cannot read the model script ${file}: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  const result = scriptSchema.safeParse(raw);
  if (!result.success)
    throw new UserError('usage', `${file}: ${formatIssues(result.error.issues).join('; ')}`);
  return result.data;
}

async function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** Where a worker speaking Chat Completions is served: apart from the Meta-agent's own Chat Completions. */
const WORKER_CHAT_PREFIX = '/worker/v1';

/** A running scripted model. `baseUrl` includes `/v1`; `origin` does not (an Anthropic base URL). */
export interface ScriptedModelServer {
  baseUrl: string;
  /** The base URL of a worker over Chat Completions (the Meta-agent's route is its own). */
  workerChatBaseUrl: string;
  origin: string;
  port: number;
  /** Replies not used yet, per side. */
  remaining(): { meta: number; worker: number };
  close(): Promise<void>;
}

/** The Meta-agent's next Chat Completions reply, streamed or whole as the request asks. */
function answerChat(
  script: ModelScript,
  position: ScriptPosition,
  body: Record<string, unknown>,
  response: ServerResponse,
): void {
  const text = script.meta[position.meta];
  if (text === undefined) {
    scriptExhausted(
      response,
      `the model script (--model-script) ran out: all ${script.meta.length} Meta-agent replies were used and the task asked for another. Add replies to the script`,
    );
    return;
  }
  position.meta += 1;
  const usage = {
    prompt_tokens: Math.ceil(JSON.stringify(body).length / 4),
    completion_tokens: Math.ceil(text.length / 4),
  };
  const id = `chatcmpl-script-${(position.sequence += 1)}`;
  const model = String(body.model ?? 'scripted');
  if (body.stream) {
    sse(response, [
      {
        id,
        object: 'chat.completion.chunk',
        model,
        choices: [{ index: 0, delta: { role: 'assistant', content: text }, finish_reason: null }],
      },
      {
        id,
        object: 'chat.completion.chunk',
        model,
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        usage,
      },
    ]);
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(
    JSON.stringify({
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    }),
  );
}

export async function startScriptedModelServer(script: ModelScript): Promise<ScriptedModelServer> {
  const position: ScriptPosition = { meta: 0, worker: 0, sequence: 0 };
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const body = await readBody(request);
    const url = request.url ?? '';
    if (request.method === 'POST' && url.startsWith(`${WORKER_CHAT_PREFIX}/`)) {
      answerWorkerChat(script, position, body, response);
      return;
    }
    if (request.method === 'POST' && url.endsWith('/chat/completions')) {
      answerChat(script, position, body, response);
      return;
    }
    if (request.method === 'POST' && url.endsWith('/responses')) {
      answerResponses(script, position, body, response);
      return;
    }
    if (request.method === 'POST' && /\/v1\/messages(\?|$)/.test(url)) {
      answerMessages(script, position, body, response);
      return;
    }
    const gemini = /\/v1beta\/models\/([^/:?]+):streamGenerateContent/.exec(url);
    if (request.method === 'POST' && gemini) {
      answerGemini(script, position, body, gemini[1] ?? 'scripted', response);
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { message: `not scripted: ${request.method} ${url}` } }));
  };
  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      response.writeHead(500);
      response.end(String(error));
    });
  });
  // 0.0.0.0 so the sandbox reaches it through host.docker.internal when the network policy allows.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '0.0.0.0', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    workerChatBaseUrl: `http://127.0.0.1:${port}${WORKER_CHAT_PREFIX}`,
    origin: `http://127.0.0.1:${port}`,
    port,
    remaining: () => ({
      meta: script.meta.length - position.meta,
      worker: script.worker.length - position.worker,
    }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
