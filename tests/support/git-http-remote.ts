/**
 * A real git remote over HTTP for tests: git's own `git http-backend` (smart HTTP, fetch and push) behind a
 * small local server that asks for basic auth, the case of a CI runner pushing with a token. Every request is
 * recorded (method, path, whether it carried the right credentials) so a test can prove what reached it.
 *
 * Repositories are bare repositories under one temporary root; `protect(repo, branch)` installs a
 * `pre-receive` hook that rejects any update of that branch, the way a forge's protected branch answers.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

/** One request the remote received. */
export interface GitHttpRequest {
  method: string;
  /** The path and query, e.g. `/app.git/info/refs?service=git-upload-pack`. */
  target: string;
  /** True when the request carried the remote's user and password. */
  authorized: boolean;
  /** The raw Authorization header, so a test can look for where a token went. */
  authorization: string | undefined;
}

export interface GitHttpRemoteOptions {
  user?: string;
  password?: string;
}

export class GitHttpRemote {
  readonly root = mkdtempSync(join(tmpdir(), 'ar-git-remote-'));
  readonly requests: GitHttpRequest[] = [];
  readonly user: string;
  readonly password: string;
  private server: Server | null = null;
  private port = 0;

  constructor(options: GitHttpRemoteOptions = {}) {
    this.user = options.user ?? 'ci-bot';
    this.password = options.password ?? 'ghp_remoteTestToken0123456789abcdefABCDEF';
  }

  async start(): Promise<this> {
    const expected = `Basic ${Buffer.from(`${this.user}:${this.password}`).toString('base64')}`;
    this.server = createServer((request, response) => {
      const target = request.url ?? '/';
      const authorization = request.headers.authorization;
      const authorized = authorization === expected;
      this.requests.push({ method: request.method ?? '', target, authorized, authorization });
      if (!authorized) {
        response.writeHead(401, { 'www-authenticate': 'Basic realm="git"', 'content-type': 'text/plain' });
        response.end('authentication required\n');
        request.resume();
        return;
      }
      const url = new URL(target, 'http://remote');
      const backend = spawn('git', ['http-backend'], {
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          GIT_PROJECT_ROOT: this.root,
          GIT_HTTP_EXPORT_ALL: '1',
          REQUEST_METHOD: request.method ?? 'GET',
          PATH_INFO: decodeURIComponent(url.pathname),
          QUERY_STRING: url.search.slice(1),
          CONTENT_TYPE: request.headers['content-type'] ?? '',
          REMOTE_USER: this.user,
          REMOTE_ADDR: request.socket.remoteAddress ?? '127.0.0.1',
          ...(request.headers['content-encoding'] === undefined
            ? {}
            : { HTTP_CONTENT_ENCODING: String(request.headers['content-encoding']) }),
          ...(request.headers['git-protocol'] === undefined
            ? {}
            : { GIT_PROTOCOL: String(request.headers['git-protocol']) }),
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      request.pipe(backend.stdin);
      backend.stderr.resume();
      let head = Buffer.alloc(0);
      let headersSent = false;
      backend.stdout.on('data', (chunk: Buffer) => {
        if (headersSent) {
          response.write(chunk);
          return;
        }
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        let status = 200;
        const headers: Record<string, string> = {};
        for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
          const colon = line.indexOf(':');
          if (colon < 0) continue;
          const name = line.slice(0, colon).trim();
          const value = line.slice(colon + 1).trim();
          if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
          else headers[name] = value;
        }
        response.writeHead(status, headers);
        headersSent = true;
        response.write(head.subarray(end + 4));
      });
      backend.on('close', () => {
        if (!headersSent) response.writeHead(500).end('git http-backend gave no answer\n');
        else response.end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** The URL of a repository with no credentials in it (`http://127.0.0.1:PORT/NAME.git`). */
  url(repo: string): string {
    return `http://127.0.0.1:${this.port}/${repo}.git`;
  }

  /** The path of a repository's bare directory on this machine (for `file://` and for reading refs). */
  path(repo: string): string {
    return join(this.root, `${repo}.git`);
  }

  /** Makes a bare repository whose `main` holds `source`'s `main` (a git directory on this machine). */
  async createFrom(repo: string, source: string, branch = 'main'): Promise<string> {
    const bare = this.path(repo);
    await execa('git', ['init', '--quiet', '--bare', '--initial-branch', branch, bare]);
    await execa('git', ['-C', source, 'push', '--quiet', bare, `${branch}:refs/heads/${branch}`]);
    return bare;
  }

  /** Rejects every push that updates `branch` in `repo`, as a protected branch does. */
  protect(repo: string, branch: string): void {
    const hook = join(this.path(repo), 'hooks', 'pre-receive');
    writeFileSync(
      hook,
      [
        '#!/bin/sh',
        'while read old new ref; do',
        `  if [ "$ref" = "refs/heads/${branch}" ]; then`,
        `    echo "protected branch: ${branch} cannot be updated by a push" >&2`,
        '    exit 1',
        '  fi',
        'done',
        '',
      ].join('\n'),
    );
    chmodSync(hook, 0o755);
  }

  /** The commit a ref of `repo` points at, or null when it has none. */
  async ref(repo: string, ref: string): Promise<string | null> {
    const result = await execa('git', ['-C', this.path(repo), 'rev-parse', '--verify', '--quiet', ref], {
      reject: false,
    });
    return result.exitCode === 0 ? result.stdout.trim() : null;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      if (this.server === null) resolve();
      else this.server.close(() => resolve());
      this.server?.closeAllConnections();
    });
    rmSync(this.root, { recursive: true, force: true });
  }
}
