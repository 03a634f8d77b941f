/**
 * The floor: the Docker Engine API called directly over its unix socket with node:http and a keep-alive
 * agent, nothing else (no dockerode, no CLI). What agent-runner's sandbox calls are measured against.
 */
import http from 'node:http';

export interface RawEngine {
  /** POST /containers/create then /containers/{id}/start; returns the id. */
  createAndStart(options: object): Promise<string>;
  /** An exec of `argv` run to its end (output drained); returns its exit code. */
  exec(containerId: string, argv: readonly string[]): Promise<number>;
  /** DELETE /containers/{id}?force=true&v=true. */
  remove(containerId: string): Promise<void>;
  close(): void;
}

/** The engine's socket: DOCKER_HOST when it is a unix:// address, else the usual path. */
export function engineSocketPath(env: NodeJS.ProcessEnv = process.env): string {
  const host = env.DOCKER_HOST;
  return host?.startsWith('unix://') ? host.slice('unix://'.length) : '/var/run/docker.sock';
}

export function rawEngine(socketPath = engineSocketPath()): RawEngine {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const request = (method: string, url: string, body?: unknown): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const outgoing = http.request(
        {
          socketPath,
          agent,
          method,
          path: url,
          headers: payload ? { 'Content-Type': 'application/json', 'Content-Length': payload.length } : {},
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          response.on('error', reject);
        },
      );
      outgoing.on('error', reject);
      outgoing.end(payload);
    });
  const expect = async (method: string, url: string, body?: unknown): Promise<string> => {
    const { status, text } = await request(method, url, body);
    if (status >= 300 && status !== 304) throw new Error(`${method} ${url}: HTTP ${status} ${text.trim()}`);
    return text;
  };
  return {
    async createAndStart(options) {
      const { name, ...body } = options as { name?: string };
      const query = name ? `?name=${encodeURIComponent(name)}` : '';
      const created = JSON.parse(await expect('POST', `/containers/create${query}`, body)) as { Id: string };
      await expect('POST', `/containers/${created.Id}/start`);
      return created.Id;
    },
    async exec(containerId, argv) {
      const created = JSON.parse(
        await expect('POST', `/containers/${containerId}/exec`, {
          Cmd: argv,
          AttachStdout: true,
          AttachStderr: true,
        }),
      ) as { Id: string };
      // Not detached: the response is the multiplexed output stream, which ends when the process does.
      await expect('POST', `/exec/${created.Id}/start`, { Detach: false, Tty: false });
      const inspected = JSON.parse(await expect('GET', `/exec/${created.Id}/json`)) as { ExitCode: number };
      return inspected.ExitCode;
    },
    async remove(containerId) {
      await expect('DELETE', `/containers/${containerId}?force=true&v=true`);
    },
    close() {
      agent.destroy();
    },
  };
}
