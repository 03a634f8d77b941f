/**
 * Where the package's own data directories (templates/, protocols/) are, whether running from src/ with
 * tsx or from dist/ after a build: walk up from this file to the directory holding package.json.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { InternalError } from '../errors.js';

let cached: string | undefined;

/** The root directory of the agent-runner package. */
export function packageRoot(): string {
  if (cached) return cached;
  let directory = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(directory, 'package.json')) && existsSync(path.join(directory, 'templates'))) {
      cached = directory;
      return directory;
    }
    const parent = path.dirname(directory);
    if (parent === directory)
      throw new InternalError('Cannot find the agent-runner package root (templates/ is missing)');
    directory = parent;
  }
}

export const defaultTemplatesDir = (): string => path.join(packageRoot(), 'templates');
export const defaultProtocolsDir = (): string => path.join(packageRoot(), 'protocols');
