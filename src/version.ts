import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The package version, read once from package.json (works from src/ under vitest and from dist/). */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * The package root (templates/, patterns/, Dockerfile.worker live there). fileURLToPath, not the URL's
 * pathname: an install under a directory with a space or non-ASCII name would otherwise read `%20` paths.
 */
export const PACKAGE_ROOT: string = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
