/**
 * Forwarding one HTTP request to an upstream URL with node's own http/https clients, so bytes stream through
 * as they arrive (no buffering, no re-encoding). Hop-by-hop headers are dropped as RFC 9110 says.
 */
import http from 'node:http';
import https from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

/** Incoming headers minus hop-by-hop ones and `drop`. */
export function forwardableHeaders(
  headers: IncomingHttpHeaders,
  drop: readonly string[] = [],
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || drop.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** `base` (which may carry a path like `/v1`) joined with `rest` (`/responses?x=1`). */
export function joinUrl(base: string, rest: string): URL {
  const url = new URL(base);
  const [restPath, query] = rest.split('?', 2) as [string, string | undefined];
  url.pathname = `${url.pathname.replace(/\/$/, '')}/${restPath.replace(/^\//, '')}`;
  url.search = query === undefined ? '' : `?${query}`;
  return url;
}

/**
 * Sends the request and resolves with the upstream's response (headers received, body not yet read);
 * `onSent` is called once the whole request is handed to the connection.
 */
export function sendUpstream(
  url: URL,
  method: string,
  headers: OutgoingHttpHeaders,
  body: Buffer,
  signal?: AbortSignal,
  /** A keep-alive agent of the caller's; node's global agent otherwise. */
  agent?: http.Agent | https.Agent,
  onSent?: () => void,
): Promise<IncomingMessage> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      url,
      { method, headers: { ...headers, 'content-length': body.length }, signal, ...(agent ? { agent } : {}) },
      resolve,
    );
    request.setNoDelay(true);
    request.on('error', reject);
    if (onSent) request.once('finish', onSent);
    request.end(body);
  });
}
