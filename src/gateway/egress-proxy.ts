/**
 * The gateway as an HTTP proxy for the `allowlist` network policy: CONNECT tunnels (HTTPS) and absolute-form
 * requests (plain HTTP) to listed hosts only. The sandbox has no network interface but loopback, so this is
 * the only way out whatever the worker does; the proxy environment variables only tell well-behaved tools
 * where the door is.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import CacheableLookup from 'cacheable-lookup';
import { readBoundedBody } from './bounded-body.js';
import { isHostAllowed } from './domain-allowlist.js';
import { forwardableHeaders, sendUpstream } from './http-forward.js';

/**
 * One DNS cache for every tunnel: answers are kept for their TTL (at most 5 minutes), concurrent questions
 * for one name share one query, and queries go through the resolver rather than getaddrinfo, whose four
 * threads a package manager opening hundreds of connections used to saturate (the process then also waited
 * for the queue to drain before it could exit). Names the resolver does not know (/etc/hosts) fall back to
 * getaddrinfo, cached too.
 */
export const egressDnsCache = new CacheableLookup({ maxTtl: 300, errorTtl: 0.5, fallbackDuration: 300 });

/**
 * Kept-alive TLS connections for the registry route: a package manager's hundreds of requests share a few
 * upstream connections instead of one tunnel and TLS handshake each.
 */
const registryAgent = new https.Agent({
  keepAlive: true,
  maxSockets: 32,
  maxFreeSockets: 32,
  ...({ lookup: egressDnsCache.lookup } as object),
});

/**
 * The registry route's host names: `<registry host>.agent-runner.invalid` (a reserved name no resolver
 * answers). A package manager given `http://registry.npmjs.org.agent-runner.invalid/` as its registry sends
 * every request to the proxy (the name is not in NO_PROXY) in absolute form, and the gateway fetches it from
 * `https://registry.npmjs.org/` itself. A host name rather than a path prefix: npm builds tarball URLs of a
 * lockfile without `resolved` from the registry's origin alone.
 */
export const REGISTRY_ROUTE_SUFFIX = '.agent-runner.invalid';

/** The registry URL a package manager in the sandbox is given for `host`. */
export function registryRouteUrl(host: string): string {
  return `http://${host}${REGISTRY_ROUTE_SUFFIX}/`;
}

/**
 * A request for `http://<host>.agent-runner.invalid/<path>` from the sandbox: forwarded to
 * `https://<host>/<path>` over kept-alive connections when the host is allowed, 403 otherwise. npm gets this
 * as its registry under `allowlist`: through a proxy npm opens a new CONNECT tunnel (and TLS handshake) per
 * request, hundreds at once, and its handshakes stall; through this route the same install is as fast as with
 * a direct network. Integrity is unchanged: npm checks every tarball against the lockfile's hash.
 */
export async function handleRegistryRequest(
  context: EgressProxyContext,
  request: IncomingMessage,
  response: ServerResponse,
  routed: URL,
): Promise<void> {
  const host = routed.hostname.slice(0, -REGISTRY_ROUTE_SUFFIX.length);
  const allowlist = context.allowlist();
  if (host === '' || routed.port !== '' || allowlist === null || !isHostAllowed(host, allowlist)) {
    context.log(`registry route refused ${host}`);
    response.writeHead(403, { 'content-type': 'text/plain' });
    response.end(`${refusal(host, allowlist)}\n`);
    return;
  }
  const target = new URL(`https://${host}${routed.pathname}${routed.search}`);
  await forwardBuffered(request, response, target, registryAgent, context, {
    label: 'registry',
    name: target.host,
    route: 'agent-runner registry route',
  });
}

/** Kept-alive upstream connections for plain-HTTP proxying (tunnels are the client's own connections). */
const plainAgent = new http.Agent({
  keepAlive: true,
  maxFreeSockets: 16,
  // The agent passes `lookup` on to net.connect; its types do not say so.
  ...({ lookup: egressDnsCache.lookup } as object),
});

/** The hosts the proxy lets through now; null refuses everything (`gateway-only`, `open`). */
export type EgressAllowlist = readonly string[] | null;

export interface EgressProxyContext {
  allowlist(): EgressAllowlist;
  log(line: string): void;
  /** The largest request body forwarded (`gateway.maxRequestBytes`); 413 above. */
  maxBodyBytes: number;
  /** A tunnel with no data either way for this long is closed (`gateway.idleTimeout`), freeing its slot. */
  tunnelIdleMs: number;
}

/**
 * Sends one buffered request on to `target` over `agent` and streams the answer back; an unreachable upstream
 * is a 502 naming it. Shared by the registry route and plain-HTTP proxying, which differ only in the agent.
 */
async function forwardBuffered(
  request: IncomingMessage,
  response: ServerResponse,
  target: URL,
  agent: http.Agent,
  context: EgressProxyContext,
  names: { label: string; name: string; route: string },
): Promise<void> {
  // Counted as it streams in: a worker cannot make the host hold more than the cap.
  const read = await readBoundedBody(request, context.maxBodyBytes);
  if ('tooLarge' in read) {
    context.log(
      `${names.label} refused ${request.method ?? ''} ${names.name}: body over ${context.maxBodyBytes} bytes`,
    );
    // Not read to the end: the connection cannot carry another request.
    response.writeHead(413, { 'content-type': 'text/plain', connection: 'close' });
    response.on('finish', () => request.socket.destroy());
    response.end(
      `agent-runner: a request body through the sandbox proxy is limited to ${context.maxBodyBytes} bytes (gateway.maxRequestBytes); at least ${read.tooLarge} were sent.\n`,
    );
    return;
  }
  try {
    const upstream = await sendUpstream(
      target,
      request.method ?? 'GET',
      { ...forwardableHeaders(request.headers), host: target.host },
      read.body,
      undefined,
      agent,
    );
    context.log(`${names.label} ${request.method ?? ''} ${names.name} -> ${upstream.statusCode ?? 0}`);
    response.writeHead(upstream.statusCode ?? 502, forwardableHeaders(upstream.headers));
    upstream.pipe(response);
    response.on('close', () => upstream.destroy());
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    context.log(`${names.label} ${names.name} failed: ${message}`);
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
    response.end(`${names.route}: ${names.name} unreachable: ${message}\n`);
  }
}

function refusal(host: string, allowlist: EgressAllowlist): string {
  return allowlist === null
    ? `agent-runner: the sandbox network policy allows no connection to ${host} (only the model gateway).`
    : `agent-runner: ${host} is not in sandbox.allowlist (allowed: ${allowlist.join(', ') || 'nothing'}).`;
}

/** `host:port` of a CONNECT target, with IPv6 brackets. */
function splitAuthority(authority: string): { host: string; port: number } | null {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(authority);
  if (!match?.[1] || !match[2]) return null;
  return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) };
}

/** Handles `CONNECT host:port`: a raw tunnel when the host is listed, 403 otherwise. */
export function handleConnect(
  context: EgressProxyContext,
  request: IncomingMessage,
  client: Duplex,
  head: Buffer,
): void {
  const target = splitAuthority(request.url ?? '');
  const allowlist = context.allowlist();
  if (target === null || allowlist === null || !isHostAllowed(target.host, allowlist)) {
    const reason = refusal(target?.host ?? String(request.url), allowlist);
    context.log(`proxy refused CONNECT ${request.url ?? ''}`);
    client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${reason}\n`);
    return;
  }
  const upstream = net.connect({
    port: target.port,
    host: target.host,
    lookup: egressDnsCache.lookup as unknown as net.LookupFunction,
    noDelay: true,
    keepAlive: true,
  });
  const close = (): void => {
    upstream.destroy();
    client.destroy();
  };
  const began = Date.now();
  upstream.once('connect', () => {
    context.log(`proxy CONNECT ${target.host}:${target.port} (${Date.now() - began} ms)`);
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', (error) => {
    if (!upstream.connecting) return close();
    context.log(`proxy CONNECT ${target.host}:${target.port} failed: ${error.message}`);
    client.end(`HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\n${error.message}\n`);
  });
  client.on('error', close);
  client.on('close', () => upstream.destroy());
  // An idle tunnel must not hold one of gateway.maxConnections' slots forever; the client socket sees both
  // directions' data, so its inactivity is the tunnel's.
  if (client instanceof net.Socket)
    client.setTimeout(context.tunnelIdleMs, () => {
      context.log(`proxy CONNECT ${target.host}:${target.port} closed: idle for ${context.tunnelIdleMs} ms`);
      close();
    });
}

/** Handles an absolute-form request (`GET http://host/path`) through the proxy. */
export async function handlePlainProxy(
  context: EgressProxyContext,
  request: IncomingMessage,
  response: ServerResponse,
  target: URL,
): Promise<void> {
  if (target.protocol === 'http:' && target.hostname.endsWith(REGISTRY_ROUTE_SUFFIX)) {
    await handleRegistryRequest(context, request, response, target);
    return;
  }
  const allowlist = context.allowlist();
  if (target.protocol !== 'http:' || allowlist === null || !isHostAllowed(target.hostname, allowlist)) {
    context.log(`proxy refused ${request.method ?? ''} ${target.origin}`);
    response.writeHead(403, { 'content-type': 'text/plain' });
    response.end(`${refusal(target.hostname, allowlist)}\n`);
    return;
  }
  await forwardBuffered(request, response, target, plainAgent, context, {
    label: 'proxy',
    name: target.origin,
    route: 'agent-runner proxy',
  });
}
