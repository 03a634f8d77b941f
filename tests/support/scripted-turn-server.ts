/**
 * What the scripted model servers of one wire protocol each (Anthropic Messages, Gemini) share: an HTTP
 * server on a free local port that records every request (method, target, headers, parsed body) and answers
 * each with the next scripted turn, or a protocol error for an error turn or a request past the script's end.
 * A subclass says only how its protocol answers a turn and an error.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A scripted error answer: the status and the message. */
export interface ErrorTurn {
  status: number;
  error: string;
}

/** One recorded request; `body` is the parsed JSON body, or null when it was not JSON. */
export interface RecordedTurnRequest<Body> {
  method: string;
  target: string;
  headers: IncomingHttpHeaders;
  body: Body | null;
}

export abstract class ScriptedTurnServer<Turn extends object, Body> {
  readonly requests: RecordedTurnRequest<Body>[] = [];
  private server: Server | null = null;
  /** The index of the next turn; an answer reads it as the index of the turn it answers plus one. */
  protected next = 0;

  constructor(private readonly turns: (Turn | ErrorTurn)[]) {}

  /** The JSON body of an error answer (`message`: the turn's, or that the script ran out). */
  protected abstract errorBody(status: number, message: string | undefined): unknown;

  /** Answers one scripted turn. */
  protected abstract answer(turn: Turn, body: Body | null, response: ServerResponse): void;

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        let body: Body | null = null;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
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
        if (turn === undefined || isErrorTurn(turn)) {
          const status = turn?.status ?? 500;
          response.writeHead(status, { 'content-type': 'application/json' });
          response.end(JSON.stringify(this.errorBody(status, turn?.error)));
          return;
        }
        this.answer(turn, body, response);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return this;
  }

  /** The origin, `http://127.0.0.1:<port>` (without a protocol's path prefix). */
  get origin(): string {
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}`;
  }

  /** Turns not used yet. */
  remaining(): number {
    return this.turns.length - this.next;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

function isErrorTurn<Turn extends object>(turn: Turn | ErrorTurn): turn is ErrorTurn {
  return 'status' in turn;
}
