/**
 * A Docker engine that can vanish: a unix-socket forwarder to the real engine's socket. `vanish()` closes the
 * listener and cuts every open connection, which is what a runner sees when dockerd stops — without stopping
 * the shared engine other tests use. Point a runner at it with DOCKER_HOST=unix://<socketPath>.
 * With `hold`, connections are accepted but nothing is forwarded: an engine that has not answered yet (the
 * runner's ping still open) when it vanishes.
 */
import { rmSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';

export interface VanishingDocker {
  socketPath: string;
  vanish(): Promise<void>;
}

export async function startVanishingDocker(
  socketPath: string,
  target = '/var/run/docker.sock',
  options: { hold?: boolean } = {},
): Promise<VanishingDocker> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    if (options.hold) {
      client.on('error', () => client.destroy());
      client.on('close', () => sockets.delete(client));
      return;
    }
    const upstream = createConnection(target);
    sockets.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
  });
  rmSync(socketPath, { force: true });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    vanish: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
      rmSync(socketPath, { force: true });
    },
  };
}
