/**
 * How the CLI is bundled, for the package (scripts/bundle-cli.mjs) and for the tests that start it as a
 * process (tests/support/cli-bundle.ts): one set of options, so the tests run what the package ships.
 */
export const CLI_BUNDLE_OPTIONS = {
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // jsonc-parser's main file is a UMD build whose require() calls a bundler cannot follow. pg (and pg-boss and
  // node-pg-migrate on it) reach an optional native driver by require(), and only `--control` loads them.
  // dockerode is CommonJS with optional native parts, and only the Docker side, loaded while planning, imports it.
  // write-file-atomic names its temporary files after its own `__filename`, which an ESM bundle does not define.
  external: ['dockerode', 'jsonc-parser', 'pg', 'pg-boss', 'node-pg-migrate', 'write-file-atomic'],
  // CommonJS dependencies bundled into ESM still call require() for Node's built-in modules.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  logLevel: 'warning',
};
