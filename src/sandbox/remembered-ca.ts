/**
 * The extra CA bundle the last successful `image build` trusted, remembered in the user's state directory
 * (`$XDG_STATE_HOME/agent-runner/extra-ca.json`, default `~/.local/state/...`), so a later build (a derived
 * image, `image build` with no flag) trusts the same bundle without being told again.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { userStateFile } from '../config/user-state.js';

export function rememberedCaFile(env: NodeJS.ProcessEnv): string {
  return userStateFile(env, 'extra-ca.json');
}

/** Records `caPath` (absolute) as the bundle to trust from now on. Best effort: a read-only home is fine. */
export async function rememberCa(env: NodeJS.ProcessEnv, caPath: string): Promise<void> {
  const file = rememberedCaFile(env);
  await mkdir(path.dirname(file), { recursive: true })
    .then(() => writeFile(file, `${JSON.stringify({ path: path.resolve(caPath) })}\n`))
    .catch(() => undefined);
}

/** The remembered bundle's path, when one was recorded and the file still exists. */
export async function rememberedCa(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  try {
    const { path: caPath } = JSON.parse(await readFile(rememberedCaFile(env), 'utf8')) as { path?: unknown };
    if (typeof caPath !== 'string') return undefined;
    await readFile(caPath);
    return caPath;
  } catch {
    return undefined;
  }
}
