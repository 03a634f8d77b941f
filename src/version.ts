import { readFileSync } from 'node:fs';

/** The package version, read once from package.json (works from src/ under vitest and from dist/). */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** The package root (templates/, patterns/, Dockerfile.worker live there). */
export const PACKAGE_ROOT: string = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
