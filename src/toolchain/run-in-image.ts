/**
 * Asking an image something once: a throwaway container (no network, not started by the task) that runs one
 * command; its stdout is returned. Used to read the image's own Node version and the CA bundle it trusts.
 */
import type Docker from 'dockerode';
import type { ContainerRuntime } from '../core/records.js';

/** Splits Docker's multiplexed log stream (8-byte frame headers) and keeps stdout. */
export function demuxStdout(buffer: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= buffer.length) {
    const stream = buffer[offset];
    const size = buffer.readUInt32BE(offset + 4);
    if (stream === 1) parts.push(buffer.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}

/** Runs `argv` in `image` (under `runtime`, default the engine's) and returns its stdout ('' when it fails). */
export async function runInImage(
  docker: Docker,
  image: string,
  argv: string[],
  runtime?: ContainerRuntime,
): Promise<string> {
  const container = await docker.createContainer({
    Image: image,
    Entrypoint: [argv[0] ?? 'true'],
    Cmd: argv.slice(1),
    HostConfig: { NetworkMode: 'none', AutoRemove: false, ...(runtime ? { Runtime: runtime } : {}) },
  });
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    if (StatusCode !== 0) return '';
    const logs = (await container.logs({ stdout: true, stderr: false, follow: false })) as unknown as Buffer;
    return demuxStdout(logs);
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}

/** Where Dockerfile.worker puts the extra CA bundle it was built with. */
export const IMAGE_EXTRA_CA_PATH = '/usr/local/share/ca-certificates/agent-runner-extra-ca.crt';
