/**
 * A scripted model speaking the Gemini API as documented: `POST /v1beta/models/{model}:streamGenerateContent
 * ?alt=sse` answered with `data:` chunks of GenerateContentResponse (candidates with content parts, a
 * `functionCall` or `text`, and `usageMetadata`), so the real Gemini CLI runs its real HTTP path against it.
 * Each request takes the next turn: a `run_shell_command` call, or a final text. Every request is recorded.
 */
import type { ServerResponse } from 'node:http';
import { ScriptedTurnServer, type RecordedTurnRequest } from './scripted-turn-server.js';

export type GeminiTurn =
  | { shell: string; usage?: { prompt: number; candidates: number; cached?: number; thoughts?: number } }
  | { text: string; usage?: { prompt: number; candidates: number; cached?: number; thoughts?: number } }
  | { status: number; error: string };

type GeminiBody = { contents?: unknown[]; [key: string]: unknown };

export type RecordedGeminiRequest = RecordedTurnRequest<GeminiBody>;

export class ScriptedGeminiServer extends ScriptedTurnServer<
  Exclude<GeminiTurn, { status: number }>,
  GeminiBody
> {
  protected errorBody(status: number, message: string | undefined): unknown {
    return { error: { code: status, message: message ?? 'the script ran out', status: 'ERROR' } };
  }

  protected answer(
    turn: Exclude<GeminiTurn, { status: number }>,
    _body: GeminiBody | null,
    response: ServerResponse,
  ): void {
    const usage = turn.usage ?? { prompt: 100, candidates: 20 };
    const part =
      'shell' in turn
        ? { functionCall: { name: 'run_shell_command', args: { command: turn.shell } } }
        : { text: turn.text };
    const chunk = {
      candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: {
        promptTokenCount: usage.prompt,
        candidatesTokenCount: usage.candidates,
        ...(usage.cached !== undefined ? { cachedContentTokenCount: usage.cached } : {}),
        ...(usage.thoughts !== undefined ? { thoughtsTokenCount: usage.thoughts } : {}),
        totalTokenCount: usage.prompt + usage.candidates + (usage.thoughts ?? 0),
      },
    };
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.end(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
  }
}
