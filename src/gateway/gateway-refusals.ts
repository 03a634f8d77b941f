/**
 * How the gateway says no: one JSON error answer, one log line and one `gateway_refused` event per refused
 * request. The path is the worker's text, so it is clipped and redacted before it is written anywhere, and
 * only the first {@link MAX_RECORDED_REFUSALS} refusals of a task are recorded one by one, so a flood of
 * refused requests cannot fill the journal or the disk.
 */
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { GatewayRefusal, GatewayRefusalReason } from '../core/events.js';
import type { Redactor } from '../notes/redact.js';

export const MAX_RECORDED_REFUSALS = 50;

const STATUS_OF: Record<GatewayRefusalReason, number> = {
  path: 403,
  route: 403,
  token: 403,
  model: 403,
  budget: 403,
  body_too_large: 413,
  headers_too_large: 431,
  rate_limit: 429,
};

/** An OpenAI-style JSON error (a response already streaming is cut instead). */
export function jsonError(response: ServerResponse, status: number, message: string, type: string): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ error: { message, type, code: type } }));
}

export type RefusalInput = Omit<GatewayRefusal, 'status'>;

export class GatewayRefusals {
  /** Requests refused so far (all of them, recorded or not). */
  count = 0;
  private readonly answered = new WeakSet<Duplex>();

  constructor(
    private readonly redact: Redactor,
    private readonly log: (line: string) => void,
    private readonly onRefusal?: (refusal: GatewayRefusal) => void,
  ) {}

  /** Records a refusal and, with a response, answers it. */
  refuse(response: ServerResponse | null, refusal: RefusalInput): void {
    const status = STATUS_OF[refusal.reason];
    const recorded: GatewayRefusal = {
      ...refusal,
      path: this.redact(refusal.path.slice(0, 200)),
      detail: this.redact(refusal.detail),
      status,
    };
    this.count += 1;
    if (this.count <= MAX_RECORDED_REFUSALS) {
      this.log(
        `${recorded.route} request refused (${recorded.reason}, ${status}): ${recorded.method} ${recorded.path}: ${recorded.detail}`,
      );
      if (this.count === MAX_RECORDED_REFUSALS)
        this.log(`${MAX_RECORDED_REFUSALS} requests refused; further refusals are counted, not recorded`);
      this.onRefusal?.(recorded);
    }
    if (response !== null) {
      jsonError(
        response,
        status,
        `agent-runner gateway: refused (${recorded.reason}): ${recorded.detail}`,
        recorded.reason === 'budget' ? 'budget_exhausted' : `gateway_refused_${recorded.reason}`,
      );
    }
  }

  /**
   * A request node could not parse (its `clientError`): a head over the header cap is a refusal (431);
   * anything else is answered 400. Node can report several errors for one connection: the first answers.
   */
  clientError(
    route: GatewayRefusal['route'],
    error: Error & { code?: string },
    socket: Duplex,
    maxHeaderBytes: number,
  ): void {
    if (this.answered.has(socket)) return;
    this.answered.add(socket);
    let answer = 'HTTP/1.1 400 Bad Request';
    if (error.code === 'HPE_HEADER_OVERFLOW') {
      this.refuse(null, {
        route,
        method: '?',
        path: '?',
        reason: 'headers_too_large',
        detail: `request head over ${maxHeaderBytes} bytes`,
      });
      answer = 'HTTP/1.1 431 Request Header Fields Too Large';
    }
    if (socket.writable) socket.end(`${answer}\r\nConnection: close\r\n\r\n`);
    else socket.destroy();
  }
}
