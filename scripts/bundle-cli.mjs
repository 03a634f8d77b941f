/**
 * Bundles the built CLI (dist/cli/main.js) into dist/cli.js plus chunks for what it imports lazily, so that a
 * start resolves and reads a handful of files instead of hundreds: module loading is most of the time from
 * `agent-runner run` to its first Meta-agent request. The files stay in dist/ itself, where the modules that
 * find the package root from their own location (`..`) expect to be. dockerode stays external: it is CommonJS
 * with optional native parts, and only the Docker side, loaded while planning, imports it.
 */
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const dist = path.join(import.meta.dirname, '..', 'dist');
for (const name of readdirSync(dist)) if (/^cli(-[A-Z0-9]+)?\.js$/.test(name)) rmSync(path.join(dist, name));
await build({
  entryPoints: { cli: path.join(dist, 'cli', 'main.js') },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outdir: dist,
  chunkNames: 'cli-[hash]',
  // jsonc-parser's main file is a UMD build whose require() calls a bundler cannot follow.
  external: ['dockerode', 'jsonc-parser'],
  // CommonJS dependencies bundled into ESM still call require() for Node's built-in modules.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  logLevel: 'warning',
});

// The web view served by `agent-runner serve`: one browser bundle, shipped in the package (no CDN).
await build({
  entryPoints: { app: path.join(import.meta.dirname, '..', 'web', 'src', 'app.ts') },
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  outdir: path.join(dist, 'web'),
  logLevel: 'warning',
});
