/**
 * A model endpoint that misbehaves on every request, for the fault tests: `drop` closes the connection
 * without an answer, `garbage` answers 200 with a body that is not JSON, `invalid-sse` answers an event
 * stream whose events are not JSON. Listens on 0.0.0.0 so a sandbox can reach it too.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FaultMode = 'drop' | 'garbage' | 'invalid-sse';

export interface FaultModelServer {
  /** Base URL including `/v1` as seen from `host`. */
  baseUrl(host: string): string;
  requests(): number;
  close(): Promise<void>;
}

export async function startFaultModelServer(mode: FaultMode): Promise<FaultModelServer> {
  let count = 0;
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      count += 1;
      if (mode === 'drop') {
        request.socket.destroy();
      } else if (mode === 'garbage') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('<html><body>502 Bad Gateway (proxy says hello)</body></html>');
      } else {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end('data: {"type": "response.created", "response": {\n\ndata: %%%not json%%%\n\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: (host) => `http://${host}:${port}/v1`,
    requests: () => count,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
