/**
 * The web page against a real API in a real headless browser, without `npm run build`: the page's script is
 * web/src/app.ts bundled by esbuild as the build bundles it (dist/ may be stale), served at `/app.js` beside
 * the API's own routes over real HTTP; Chromium from scripts/ensure-chromium.sh (installed when missing).
 */
import { execFileSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import type { createApi } from '../../src/serve/http-api.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** web/src/app.ts bundled for the browser. */
export async function pageScript(): Promise<string> {
  const bundle = await build({
    entryPoints: [path.join(ROOT, 'web', 'src', 'app.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'warning',
  });
  return bundle.outputFiles[0]?.text ?? '';
}

/** `api` over real HTTP on a free port, with the page's script at `/app.js`. */
export async function servePage(
  api: ReturnType<typeof createApi>,
  script: string,
): Promise<{ url: string; server: ServerType; close: () => Promise<void> }> {
  const server = serve({
    fetch: (request) =>
      new URL(request.url).pathname === '/app.js'
        ? new Response(script, { headers: { 'content-type': 'text/javascript; charset=utf-8' } })
        : api.fetch(request),
    port: 0,
    hostname: '127.0.0.1',
  });
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Headless Chromium (scripts/ensure-chromium.sh finds or installs it). */
export async function launchChromium(): Promise<Browser> {
  const executablePath = execFileSync('bash', [path.join(ROOT, 'scripts', 'ensure-chromium.sh')], {
    encoding: 'utf8',
  }).trim();
  return chromium.launch({ executablePath, args: ['--no-sandbox'] });
}
