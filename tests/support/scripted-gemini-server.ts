/**
 * A scripted model speaking the Gemini API as documented: `POST /v1beta/models/{model}:streamGenerateContent
 * ?alt=sse` answered with `data:` chunks of GenerateContentResponse (candidates with content parts, a
 * `functionCall` or `text`, and `usageMetadata`), so the real Gemini CLI runs its real HTTP path against it.
 * Each request takes the next turn: a `run_shell_command` call, or a final text. Every request is recorded.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type GeminiTurn =
  | { shell: string; usage?: { prompt: number; candidates: number; cached?: number; thoughts?: number } }
  | { text: string; usage?: { prompt: number; candidates: number; cached?: number; thoughts?: number } }
  | { status: number; error: string };

export interface RecordedGeminiRequest {
  method: string;
  target: string;
  headers: IncomingHttpHeaders;
  body: { contents?: unknown[]; [key: string]: unknown } | null;
}

export class ScriptedGeminiServer {
  readonly requests: RecordedGeminiRequest[] = [];
  private server: Server | null = null;
  private next = 0;

  constructor(private readonly turns: GeminiTurn[]) {}

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        let body: RecordedGeminiRequest['body'] = null;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RecordedGeminiRequest['body'];
        } catch {
          body = null;
        }
        this.requests.push({
          method: request.method ?? '',
          target: request.url ?? '',
          headers: request.headers,
          body,
        });
        const turn = this.turns[this.next];
        this.next += 1;
        if (turn === undefined || 'status' in turn) {
          const status = turn?.status ?? 500;
          response.writeHead(status, { 'content-type': 'application/json' });
          response.end(
            JSON.stringify({
              error: { code: status, message: turn?.error ?? 'the script ran out', status: 'ERROR' },
            }),
          );
          return;
        }
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
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return this;
  }

  /** The origin (Gemini CLI's base URL has no `/v1beta`). */
  get origin(): string {
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}`;
  }

  remaining(): number {
    return this.turns.length - this.next;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
