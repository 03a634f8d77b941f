/**
 * Bundles the built CLI (dist/cli/main.js) into dist/cli.js plus chunks for what it imports lazily, so that a
 * start resolves and reads a handful of files instead of hundreds: module loading is most of the time from
 * `agent-runner run` to its first Meta-agent request. The files stay in dist/ itself, where the modules that
 * find the package root from their own location (`..`) expect to be. The options are shared with the tests'
 * bundle (scripts/cli-bundle-options.mjs).
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { build } from 'esbuild';
import { CLI_BUNDLE_OPTIONS } from './cli-bundle-options.mjs';

const dist = path.join(import.meta.dirname, '..', 'dist');
for (const name of readdirSync(dist)) if (/^cli(-[A-Z0-9]+)?\.js$/.test(name)) rmSync(path.join(dist, name));
const cli = await build({
  ...CLI_BUNDLE_OPTIONS,
  entryPoints: { cli: path.join(dist, 'cli', 'main.js') },
  outdir: dist,
  chunkNames: 'cli-[hash]',
  metafile: true,
});

// What the bundle leaves to `import` at run time must be a dependency of the package: everything else is a
// devDependency, which `npm install -g agent-runner` does not install.
const manifest = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', 'package.json'), 'utf8'));
const builtins = new Set(builtinModules);
const missing = new Set();
for (const output of Object.values(cli.metafile.outputs))
  for (const entry of output.imports) {
    if (!entry.external || entry.path.startsWith('node:') || builtins.has(entry.path)) continue;
    const name = entry.path
      .split('/')
      .slice(0, entry.path.startsWith('@') ? 2 : 1)
      .join('/');
    if (!(name in (manifest.dependencies ?? {}))) missing.add(name);
  }
if (missing.size > 0) {
  console.error(
    `dist/cli.js imports ${[...missing].join(', ')} at run time: move to "dependencies" in package.json`,
  );
  process.exit(1);
}

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
