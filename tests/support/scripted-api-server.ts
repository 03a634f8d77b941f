/**
 * What the scripted forge servers (GitHub, GitLab) share: a local HTTP server on a free port, its URL, the log
 * of calls, the violations of the forge's published API that a test fails on (`assertValid()`), the JSON body
 * read once, and a stop that closes every connection. Each server adds its routes and its validation.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Json = Record<string, unknown>;

export abstract class ScriptedApiServer<Call> {
  readonly calls: Call[] = [];
  readonly violations: string[] = [];
  private server: Server | null = null;
  private port = 0;

  /** What `assertValid()` names as violated (GitHub's API description, GitLab's documentation). */
  protected abstract readonly described: string;

  /** Answers one request; `body` is its parsed JSON (null when empty). */
  protected abstract handle(
    request: IncomingMessage,
    response: ServerResponse,
    body: Json | null,
  ): Promise<void>;

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      this.receive(request, response).catch((error: unknown) => {
        this.violations.push(`server error: ${(error as Error).message}`);
        response.writeHead(500).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** The API URL to give delivery (`deliver.apiUrl`). */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Throws when any request or response did not match the forge's published API. */
  assertValid(): void {
    if (this.violations.length > 0)
      throw new Error(`${this.described} violated:\n${this.violations.join('\n')}`);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      if (this.server === null) resolve();
      else this.server.close(() => resolve());
      this.server?.closeAllConnections();
    });
  }

  private async receive(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    await this.handle(request, response, text ? (JSON.parse(text) as Json) : null);
  }
}
