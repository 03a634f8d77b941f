/**
 * A scripted model speaking the Anthropic Messages API as documented (POST /v1/messages, `stream: true`
 * answered with the named SSE events message_start → content_block_start/delta/stop → message_delta →
 * message_stop), so the real Claude Code binary runs its real HTTP path against it. Each request takes the
 * next scripted turn: a `Bash` tool call, or a final text. Every request is recorded (method, target,
 * headers, parsed body) for the tests to inspect.
 */
import type { ServerResponse } from 'node:http';
import { ScriptedTurnServer, type RecordedTurnRequest } from './scripted-turn-server.js';

export interface AnthropicUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheCreation?: number;
}

export type AnthropicTurn =
  | { bash: string; usage?: AnthropicUsage }
  | { text: string; usage?: AnthropicUsage }
  | { status: number; error: string };

type AnthropicBody = {
  model?: string;
  messages?: { role: string; content: unknown }[];
  [key: string]: unknown;
};

export type RecordedAnthropicRequest = RecordedTurnRequest<AnthropicBody>;

const DEFAULT_USAGE: AnthropicUsage = { input: 100, output: 20 };

export class ScriptedAnthropicServer extends ScriptedTurnServer<
  Exclude<AnthropicTurn, { status: number }>,
  AnthropicBody
> {
  protected errorBody(_status: number, message: string | undefined): unknown {
    return { type: 'error', error: { type: 'api_error', message: message ?? 'the script ran out of turns' } };
  }

  protected answer(
    turn: Exclude<AnthropicTurn, { status: number }>,
    body: AnthropicBody | null,
    response: ServerResponse,
  ): void {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of this.events(turn, body?.model ?? 'unknown'))
      response.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
    response.end();
  }

  private events(turn: Exclude<AnthropicTurn, { status: number }>, model: string): Record<string, unknown>[] {
    const usage = turn.usage ?? DEFAULT_USAGE;
    const id = `msg_test_${this.next}`;
    const tool = 'bash' in turn;
    return [
      {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: usage.input,
            cache_creation_input_tokens: usage.cacheCreation ?? 0,
            cache_read_input_tokens: usage.cacheRead ?? 0,
            output_tokens: 1,
          },
        },
      },
      {
        type: 'content_block_start',
        index: 0,
        content_block: tool
          ? { type: 'tool_use', id: `toolu_test_${this.next}`, name: 'Bash', input: {} }
          : { type: 'text', text: '' },
      },
      {
        type: 'content_block_delta',
        index: 0,
        delta: tool
          ? { type: 'input_json_delta', partial_json: JSON.stringify({ command: turn.bash }) }
          : { type: 'text_delta', text: turn.text },
      },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: tool ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: usage.output },
      },
      { type: 'message_stop' },
    ];
  }
}
