/**
 * A client of the server's API: what `run --detach`, `wait`, `logs` and `answer` are made of. It finds the
 * repository's server through `.agent-runner/serve.json` (its address and token), sends JSON, and reads a
 * task's events as Server-Sent Events (eventsource-parser), resuming after the last id it saw when the
 * connection drops.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { UserError } from '../errors.js';

export const SERVE_FILE = 'serve.json';

/** A running server's address and token, as `serve` writes them. */
export interface ServeInfo {
  url: string;
  token: string;
  pid: number;
}

/** An answer of the API that is not a success: its status and the error it named. */
export class ApiError extends UserError {
  constructor(
    readonly status: number,
    readonly apiCode: string,
    message: string,
    readonly field?: string,
  ) {
    super('usage', message);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The server of `repoRoot`, or null when none runs (no file, or its process is gone). */
export async function readServeInfo(repoRoot: string): Promise<ServeInfo | null> {
  let info: ServeInfo;
  try {
    info = JSON.parse(await readFile(path.join(repoRoot, '.agent-runner', SERVE_FILE), 'utf8')) as ServeInfo;
  } catch {
    return null;
  }
  if (typeof info.url !== 'string' || typeof info.token !== 'string' || typeof info.pid !== 'number')
    return null;
  return alive(info.pid) ? info : null;
}

export class ServeClient {
  constructor(
    readonly url: string,
    private readonly token: string,
  ) {}

  static async forRepository(repoRoot: string): Promise<ServeClient> {
    const info = await readServeInfo(repoRoot);
    if (info === null)
      throw new UserError(
        'usage',
        'No agent-runner server runs for this repository: start one with `agent-runner serve` ' +
          '(`agent-runner run --detach` starts one itself).',
      );
    return new ServeClient(info.url, info.token);
  }

  /** One JSON request; a non-2xx answer throws {@link ApiError} with the server's message. */
  async request<T>(method: string, route: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.url}${route}`, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new UserError(
        'usage',
        `The agent-runner server at ${this.url} does not answer (${(error as Error).message}): is it still running?`,
      );
    }
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON (the note is Markdown).
    }
    if (!response.ok) {
      const error = (parsed as { error?: { code?: string; message?: string; field?: string } }).error;
      throw new ApiError(
        response.status,
        error?.code ?? 'error',
        error?.message ?? `HTTP ${response.status}`,
        error?.field,
      );
    }
    return parsed as T;
  }

  /**
   * A task's events, from the start (or after `after`, an event's id), live until the task ends (an `end` event) or `signal`
   * aborts; with `follow: false`, only those written so far. A dropped connection is reopened after the last id seen, at most `retries` times in a row.
   */
  async *events(
    taskId: string,
    options: { after?: string; signal?: AbortSignal; retries?: number; follow?: boolean } = {},
  ): AsyncGenerator<EventSourceMessage> {
    let lastId = options.after ?? '';
    let failures = 0;
    while (!options.signal?.aborted) {
      let response: Response;
      try {
        const query = options.follow === false ? '?follow=0' : '';
        response = await fetch(`${this.url}/api/tasks/${encodeURIComponent(taskId)}/events${query}`, {
          headers: {
            authorization: `Bearer ${this.token}`,
            accept: 'text/event-stream',
            ...(lastId !== '' ? { 'last-event-id': lastId } : {}),
          },
          ...(options.signal ? { signal: options.signal } : {}),
        });
      } catch (error) {
        if (options.signal?.aborted) return;
        failures += 1;
        if (failures > (options.retries ?? 5))
          throw new UserError('usage', `Lost the server at ${this.url}: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      if (!response.ok || response.body === null) {
        const error = (await response.json().catch(() => ({}))) as {
          error?: { code?: string; message?: string };
        };
        throw new ApiError(
          response.status,
          error.error?.code ?? 'error',
          error.error?.message ?? `HTTP ${response.status}`,
        );
      }
      failures = 0;
      const queue: EventSourceMessage[] = [];
      const parser = createParser({ onEvent: (event) => queue.push(event) });
      const decoder = new TextDecoder();
      let ended = false;
      try {
        for await (const chunk of response.body) {
          parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
          while (queue.length > 0) {
            const event = queue.shift() as EventSourceMessage;
            if (event.id !== undefined && event.id !== '') lastId = event.id;
            yield event;
            if (event.event === 'end') ended = true;
          }
          if (ended) return;
        }
      } catch (error) {
        if (options.signal?.aborted) return;
        failures += 1;
        if (failures > (options.retries ?? 5)) throw error;
      }
      if (ended) return;
    }
  }
}
