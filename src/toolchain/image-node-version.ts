/**
 * The Node version an image runs. Asking costs a throwaway container (about 0.4 s); the answer is remembered
 * by image id in the person's state directory (`image-node-versions.json`): an id names the image's content,
 * so the same id always gives the same answer, and a rebuilt image has a new id.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import { userStateFile } from '../config/user-state.js';
import { runInImage } from './run-in-image.js';

export const IMAGE_NODE_VERSIONS_FILE = 'image-node-versions.json';
/** The newest answers kept; older ones are dropped. */
const KEPT = 64;

async function remembered(file: string): Promise<Record<string, string>> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    );
  } catch {
    return {};
  }
}

/** `node --version` of `image` (`v20.11.1`), or '' when it has no Node (not remembered: it may be a failure). */
export async function imageNodeVersion(
  docker: Docker,
  image: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const id = (await docker.getImage(image).inspect()).Id;
  const file = userStateFile(env, IMAGE_NODE_VERSIONS_FILE);
  const known = await remembered(file);
  const cached = known[id];
  if (cached) return cached;
  const version = (await runInImage(docker, image, ['node', '--version'])).trim();
  if (version) {
    const entries = Object.entries({ ...known, [id]: version }).slice(-KEPT);
    const temporary = `${file}.${process.pid}.tmp`;
    await mkdir(path.dirname(file), { recursive: true })
      .then(() => writeFile(temporary, `${JSON.stringify(Object.fromEntries(entries), null, 2)}\n`))
      .then(() => rename(temporary, file))
      .catch(() => undefined);
  }
  return version;
}
