/**
 * The relay that runs inside the sandbox: it listens on 127.0.0.1:<port> and pipes every TCP connection to
 * the gateway's unix socket, which is bind-mounted into the container. The sandbox needs no network interface
 * for it (loopback is enough), so under `gateway-only` the container has network mode `none` and the gateway
 * is the only thing outside it that it can reach. Plain CommonJS for any node >= 12 (the image's own node).
 */

/** Where the gateway's host directory (socket + relay script) is mounted, read-only. */
export const GATEWAY_CONTAINER_DIR = '/run/agent-runner';
export const GATEWAY_SOCKET_NAME = 'gateway.sock';
export const RELAY_SCRIPT_NAME = 'relay.cjs';
/** The loopback port the relay listens on inside the sandbox. */
export const RELAY_PORT = 8787;

export const RELAY_SCRIPT = `'use strict';
// agent-runner relay: 127.0.0.1:PORT inside the sandbox -> the gateway's unix socket (see docs/gateway.md).
// SIGUSR1 would switch on node's inspector (127.0.0.1:9229), from which anyone reaching it could run code in
// the relay; a listener of its own turns that off (node < 22.14 has no --disable-sigusr1). The relay runs as
// the keeper uid, which the worker cannot signal anyway: this is the second wall.
process.on('SIGUSR1', () => {});
const net = require('net');
const socketPath = process.argv[2];
const port = Number(process.argv[3]);
const server = net.createServer((client) => {
  client.setNoDelay(true);
  const upstream = net.connect(socketPath);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', close);
  upstream.on('close', close);
  client.pipe(upstream);
  upstream.pipe(client);
});
server.on('error', (error) => {
  process.stderr.write('agent-runner relay: ' + error.message + '\\n');
  process.exit(1);
});
server.listen(port, '127.0.0.1');
`;

/**
 * The sandbox's keeper: a shell that keeps the relay running (restarting it if it dies) and then sleeps. Both
 * run as the container's own user, the keeper uid (see containerCreateOptions), which the worker's uid cannot
 * signal: the worker can neither kill the relay nor make it start anything. It runs in `/`, not in the
 * worker's /workspace, so a restarted node finds nothing of the worker's next to it.
 */
export function relayKeeper(port = RELAY_PORT): string[] {
  const script = `${GATEWAY_CONTAINER_DIR}/${RELAY_SCRIPT_NAME}`;
  const socket = `${GATEWAY_CONTAINER_DIR}/${GATEWAY_SOCKET_NAME}`;
  return [
    '/bin/sh',
    '-c',
    `cd /; (while :; do node ${script} ${socket} ${port}; sleep 1; done) & exec sleep infinity`,
  ];
}
