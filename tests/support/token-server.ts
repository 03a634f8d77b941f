/**
 * The server's HTTP API on a real socket (the @hono/node-server that `serve` uses) over a real repository's
 * board, with named tokens in that repository's state directory: for tests of who may call what.
 */
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { serve } from '@hono/node-server';
import type { App } from '../../src/app.js';
import { createApp } from '../../src/app.js';
import { FileAuditLog } from '../../src/identity/file-audit-log.js';
import { FileTokenStore } from '../../src/identity/file-token-store.js';
import type { AuditLog } from '../../src/identity/audit-entry.js';
import type { TokenStore } from '../../src/identity/token-store.js';
import { Redaction } from '../../src/notes/redact.js';
import { createApi, type ApiOptions } from '../../src/serve/http-api.js';
import { TaskBoard } from '../../src/serve/task-board.js';

export interface TokenServer {
  url: string;
  /** The server's own start-up token (an admin named `server`). */
  serverToken: string;
  tokens: TokenStore;
  audit: AuditLog;
  board: TaskBoard;
  /** What the server said it could not do (the audit log unwritable...). */
  warnings: string[];
  close(): Promise<void>;
}

/** Serves `repoRoot`'s board on 127.0.0.1 (a free port). */
export async function startTokenServer(
  repoRoot: string,
  options: {
    app?: App;
    tokens?: TokenStore;
    audit?: AuditLog;
    extra?: Partial<ApiOptions>;
  } = {},
): Promise<TokenServer> {
  const redaction = new Redaction();
  const stateDir = path.join(repoRoot, '.agent-runner');
  const tokens = options.tokens ?? new FileTokenStore(stateDir);
  const audit = options.audit ?? new FileAuditLog(stateDir);
  const board = new TaskBoard(repoRoot, options.app ?? createApp(process.env, {}, redaction), process.env);
  const serverToken = `server-token-${Math.random().toString(36).slice(2)}`;
  const warnings: string[] = [];
  const api = createApi(board, {
    token: serverToken,
    tokens,
    audit,
    redaction,
    warn: (line) => warnings.push(line),
    ...options.extra,
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve({ fetch: api.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(started));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    serverToken,
    tokens,
    audit,
    board,
    warnings,
    close: async () => {
      await board.stopAll();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if ('closeAllConnections' in server) server.closeAllConnections();
      await closed;
    },
  };
}

/** One call with a token (or none): its status and JSON body (null when the body is not JSON). */
export async function call(
  url: string,
  method: string,
  route: string,
  token: string | null,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> | null; text: string }> {
  const response = await fetch(`${url}${route}`, {
    method,
    headers: {
      ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let parsed: Record<string, unknown> | null = null;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = null;
  }
  return { status: response.status, body: parsed, text };
}
