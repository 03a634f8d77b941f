/**
 * The workers' side of the scripted model (`--model-script`): the script's next worker turn answered in each
 * worker's own streamed protocol (Responses, Chat Completions, Anthropic Messages, Gemini), and what the
 * Meta-agent's side shares with it (where the script is, the answer when it ran out, an SSE reply).
 */
import type { ServerResponse } from 'node:http';
import type { ModelScript } from './scripted-model-server.js';

/** Answers with these events as data-only SSE. */
export const sse = (response: ServerResponse, events: unknown[]) => {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of events) response.write(`data: ${JSON.stringify(event)}\n\n`);
  response.end();
};
/** Where the script is: the replies used on each side, and the last id handed out (shared by both). */
export interface ScriptPosition {
  meta: number;
  worker: number;
  sequence: number;
}

/** Answers HTTP 400 `model_script_exhausted`: the script has no reply left on that side. */
export function scriptExhausted(response: ServerResponse, message: string): void {
  // 400, not 5xx: running out is final (no retries, no "try again later"), and the message says so.
  response.writeHead(400, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ error: { message, type: 'model_script_exhausted' } }));
}

type WorkerTurn = ModelScript['worker'][number];

/** The worker's next turn, or undefined when the script has none left (then answered: the script ran out). */
function takeWorkerTurn(
  script: ModelScript,
  position: ScriptPosition,
  response: ServerResponse,
): WorkerTurn | undefined {
  const turn = script.worker[position.worker];
  if (turn === undefined) {
    scriptExhausted(
      response,
      `the model script (--model-script) ran out: all ${script.worker.length} worker turns were used. Add turns to the script`,
    );
    return undefined;
  }
  position.worker += 1;
  return turn;
}

/**
 * The shell tool the client offered: qwen's `run_shell_command {command}`, opencode's `bash {command,
 * description}`, else codex's `exec_command {cmd}`.
 */
function shellCallFor(body: Record<string, unknown>, command: string): { name: string; arguments: string } {
  // A Responses tool names itself; a Chat Completions tool names its `function`.
  const tools = Array.isArray(body.tools)
    ? (body.tools as { name?: unknown; function?: { name?: unknown } }[])
    : [];
  const offered = (name: string) => tools.some((tool) => (tool.name ?? tool.function?.name) === name);
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
export function answerResponses(
  script: ModelScript,
  position: ScriptPosition,
  body: Record<string, unknown>,
  response: ServerResponse,
): void {
  const turn = takeWorkerTurn(script, position, response);
  if (turn === undefined) return;
  const id = `resp_script_${(position.sequence += 1)}`;
  const usage = {
    input_tokens: Math.ceil(JSON.stringify(body).length / 4),
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 0,
  };
  usage.total_tokens = usage.input_tokens + usage.output_tokens;
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

/** A worker's next turn over streamed Chat Completions (qwen, opencode with `api: chat`): a tool call or a text. */
export function answerWorkerChat(
  script: ModelScript,
  position: ScriptPosition,
  body: Record<string, unknown>,
  response: ServerResponse,
): void {
  const turn = takeWorkerTurn(script, position, response);
  if (turn === undefined) return;
  const id = `chatcmpl-script-${(position.sequence += 1)}`;
  const chunk = (choice: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    id,
    object: 'chat.completion.chunk',
    model: String(body.model ?? 'scripted'),
    choices: [{ index: 0, ...choice }],
    ...extra,
  });
  const delta =
    'run' in turn
      ? {
          role: 'assistant',
          tool_calls: [
            {
              index: 0,
              id: `call_${position.sequence}`,
              type: 'function',
              function: shellCallFor(body, turn.run),
            },
          ],
        }
      : { role: 'assistant', content: turn.message };
  const prompt = Math.ceil(JSON.stringify(body).length / 4);
  sse(response, [
    chunk({ delta, finish_reason: null }),
    chunk(
      { delta: {}, finish_reason: 'run' in turn ? 'tool_calls' : 'stop' },
      { usage: { prompt_tokens: prompt, completion_tokens: 20, total_tokens: prompt + 20 } },
    ),
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
export function answerMessages(
  script: ModelScript,
  position: ScriptPosition,
  body: Record<string, unknown>,
  response: ServerResponse,
): void {
  const turn = takeWorkerTurn(script, position, response);
  if (turn === undefined) return;
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
export function answerGemini(
  script: ModelScript,
  position: ScriptPosition,
  body: Record<string, unknown>,
  model: string,
  response: ServerResponse,
): void {
  const turn = takeWorkerTurn(script, position, response);
  if (turn === undefined) return;
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
