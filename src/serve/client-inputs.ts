/**
 * What an API client's request names, checked before anything starts: the PRD file, the scripted model and the
 * configuration overrides, each inside the repository and out of what its `scope.exclude` keeps from the
 * sandbox (a client reads the note, so whatever the server reads for it is the client's to read).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../config/load.js';
import { MAX_PRD_BYTES, prdFromBytes } from '../prd/load-prd.js';
import { compileGlobs } from '../workspace/scope/glob.js';
import { checkApiOverrides } from './api-config-overrides.js';
import { readRepositoryFile } from './repository-path.js';

/** A scripted model an API client names is read by the server: at most this large. */
const MAX_MODEL_SCRIPT_BYTES = 4 * 1024 * 1024;

/** The checked inputs: real paths inside the repository, overrides with their paths resolved. */
export interface ClientInputs {
  /** The PRD read from `prdPath` (absent: the request had none). */
  prd?: { path: string; text: string };
  modelScript?: string;
  overrides: Record<string, unknown>;
}

/** Checks what a start or resume request names; throws `RequestFieldError` naming the field. */
export async function checkClientInputs(
  repoRoot: string,
  env: NodeJS.ProcessEnv,
  request: { prdPath?: string; modelScript?: string; config?: Record<string, unknown> },
): Promise<ClientInputs> {
  // The repository's own configuration says what is excluded (a client cannot override scope.exclude).
  const config = await loadConfig({ repoRoot, env, flags: {} });
  const globs = compileGlobs(config.scope.exclude);
  const refused = (relativePath: string) => globs.matches(relativePath);
  const overrides = await checkApiOverrides(repoRoot, request.config ?? {}, { refused });
  const inputs: ClientInputs = { overrides };
  if (request.modelScript !== undefined)
    inputs.modelScript = (
      await readRepositoryFile(repoRoot, request.modelScript, {
        field: 'modelScript',
        maxBytes: MAX_MODEL_SCRIPT_BYTES,
        refused,
      })
    ).path;
  if (request.prdPath !== undefined) {
    const read = await readRepositoryFile(repoRoot, request.prdPath, {
      field: 'prdPath',
      maxBytes: MAX_PRD_BYTES,
      refused,
    });
    inputs.prd = { path: read.path, text: prdFromBytes(read.bytes, request.prdPath) };
  }
  return inputs;
}

/** A PRD given as text, written to a file of the state directory (then read back with the CLI's checks). */
export async function writePrdText(repoRoot: string, text: string, now: Date): Promise<string> {
  const dir = path.join(repoRoot, '.agent-runner', 'prds');
  await mkdir(dir, { recursive: true });
  const file = path.join(
    dir,
    `${now.toISOString().replace(/[:.]/g, '-')}-${Math.random().toString(16).slice(2, 8)}.md`,
  );
  await writeFile(file, text);
  return file;
}
