/**
 * A scripted model served by agent-runner itself, for the demo and for trying the tool with no API key:
 * `agent-runner run --model-script FILE`. It answers the Meta-agent's Chat Completions and the workers'
 * models (codex: the Responses API; claude: the Anthropic Messages API; gemini: the Gemini API, all streamed)
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
import { z } from 'zod';
import { formatIssues } from '../config/load.js';
import { UserError } from '../errors.js';

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

const sse = (response: ServerResponse, events: unknown[]) => {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of events) response.write(`data: ${JSON.stringify(event)}\n\n`);
  response.end();
};

/** A running scripted model. `baseUrl` includes `/v1`; `origin` does not (an Anthropic base URL). */
export interface ScriptedModelServer {
  baseUrl: string;
  origin: string;
  port: number;
  /** Replies not used yet, per side. */
  remaining(): { meta: number; worker: number };
  close(): Promise<void>;
}

/** Where the script is: the replies used on each side, and the last id handed out (shared by both). */
interface ScriptPosition {
  meta: number;
  worker: number;
  sequence: number;
}

/** Answers HTTP 400 `model_script_exhausted`: the script has no reply left on that side. */
function scriptExhausted(response: ServerResponse, message: string): void {
  // 400, not 5xx: running out is final (no retries, no "try again later"), and the message says so.
  response.writeHead(400, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ error: { message, type: 'model_script_exhausted' } }));
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

/**
 * The shell tool the client offered: qwen's `run_shell_command {command}`, opencode's `bash {command,
 * description}`, else codex's `exec_command {cmd}`.
 */
function shellCallFor(body: Record<string, unknown>, command: string): { name: string; arguments: string } {
  const tools = Array.isArray(body.tools) ? (body.tools as { name?: unknown }[]) : [];
  const offered = (name: string) => tools.some((tool) => tool.name === name);
  if (offered('run_shell_command'))
    return { name: 'run_shell_command', arguments: JSON.stringify({ command }) };
  if (offered('bash'))
    return { name: 'bash', arguments: JSON.stringify({ command, description: 'a scripted command' }) };
  return { name: 'exec_command', arguments: JSON.stringify({ cmd: command }) };
}

/** A message's text as the Responses API streams it: the item and its part added, the delta, their end. */
function messageTextEvents(itemId: string, text: string): Record<string, unknown>[] {
  const at = { item_id: itemId, output_index: 0, content_index: 0 };
  return [
    {
      type: 'response.output_item.added',
      output_index: 0,
      item: { type: 'message', role: 'assistant', id: itemId, status: 'in_progress', content: [] },
    },
    { type: 'response.content_part.added', ...at, part: { type: 'output_text', text: '', annotations: [] } },
    { type: 'response.output_text.delta', ...at, delta: text },
    { type: 'response.output_text.done', ...at, text },
    { type: 'response.content_part.done', ...at, part: { type: 'output_text', text, annotations: [] } },
  ];
}

/** The worker's next Responses turn: a shell command for codex to run, or a final message. */
function answerResponses(
  script: ModelScript,
  position: ScriptPosition,
  body: Record<string, unknown>,
  response: ServerResponse,
): void {
  const turn = script.worker[position.worker];
  const id = `resp_script_${(position.sequence += 1)}`;
  const usage = {
    input_tokens: Math.ceil(JSON.stringify(body).length / 4),
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 0,
  };
  usage.total_tokens = usage.input_tokens + usage.output_tokens;
  if (turn === undefined) {
    scriptExhausted(
      response,
      `the model script (--model-script) ran out: all ${script.worker.length} worker turns were used. Add turns to the script`,
    );
    return;
  }
  position.worker += 1;
  const item =
    'run' in turn
      ? {
          type: 'function_call',
          id: `fc_${position.sequence}`,
          call_id: `call_${position.sequence}`,
          ...shellCallFor(body, turn.run),
          status: 'completed',
        }
      : {
          type: 'message',
          role: 'assistant',
          id: `msg_${position.sequence}`,
          status: 'completed',
          content: [{ type: 'output_text', text: turn.message, annotations: [] }],
        };
  sse(response, [
    ...('message' in turn ? messageTextEvents(item.id, turn.message) : []),
    { type: 'response.output_item.done', output_index: 0, item },
    { type: 'response.completed', response: { id, status: 'completed', output: [item], usage } },
  ]);
}

/** Anthropic's streamed Messages events (`event:` + `data:` lines). */
function anthropicSse(response: ServerResponse, events: Record<string, unknown>[]): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of events)
    response.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
  response.end();
}

/** The worker's next turn as an Anthropic message: a `Bash` tool call for claude to run, or a final text. */
function answerMessages(
  script: ModelScript,
  position: ScriptPosition,
  body: Record<string, unknown>,
  response: ServerResponse,
): void {
  const turn = script.worker[position.worker];
  if (turn === undefined) {
    scriptExhausted(
      response,
      `the model script (--model-script) ran out: all ${script.worker.length} worker turns were used. Add turns to the script`,
    );
    return;
  }
  position.worker += 1;
  const sequence = (position.sequence += 1);
  const block =
    'run' in turn
      ? { type: 'tool_use', id: `toolu_script_${sequence}`, name: 'Bash', input: {} }
      : { type: 'text', text: '' };
  const delta =
    'run' in turn
      ? { type: 'input_json_delta', partial_json: JSON.stringify({ command: turn.run }) }
      : { type: 'text_delta', text: turn.message };
  anthropicSse(response, [
    {
      type: 'message_start',
      message: {
        id: `msg_script_${sequence}`,
        type: 'message',
        role: 'assistant',
        model: String(body.model ?? 'scripted'),
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: Math.ceil(JSON.stringify(body).length / 4),
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: 1,
        },
      },
    },
    { type: 'content_block_start', index: 0, content_block: block },
    { type: 'content_block_delta', index: 0, delta },
    { type: 'content_block_stop', index: 0 },
    {
      type: 'message_delta',
      delta: { stop_reason: 'run' in turn ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: 20 },
    },
    { type: 'message_stop' },
  ]);
}

/** The worker's next turn as a Gemini `streamGenerateContent` chunk: a shell call, or a final text. */
function answerGemini(
  script: ModelScript,
  position: ScriptPosition,
  body: Record<string, unknown>,
  model: string,
  response: ServerResponse,
): void {
  const turn = script.worker[position.worker];
  if (turn === undefined) {
    scriptExhausted(
      response,
      `the model script (--model-script) ran out: all ${script.worker.length} worker turns were used. Add turns to the script`,
    );
    return;
  }
  position.worker += 1;
  position.sequence += 1;
  const part =
    'run' in turn
      ? { functionCall: { name: 'run_shell_command', args: { command: turn.run } } }
      : { text: turn.message };
  const prompt = Math.ceil(JSON.stringify(body).length / 4);
  sse(response, [
    {
      candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: 20, totalTokenCount: prompt + 20 },
      modelVersion: model,
    },
  ]);
}

export async function startScriptedModelServer(script: ModelScript): Promise<ScriptedModelServer> {
  const position: ScriptPosition = { meta: 0, worker: 0, sequence: 0 };
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const body = await readBody(request);
    const url = request.url ?? '';
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
