/**
 * Answers an image gives about itself (its Node version, its Python's packages), remembered by image id in the
 * person's state directory: an id names the image's content, so the same id always gives the same answer, and
 * a rebuilt image has a new id. Asking costs a throwaway container (about 0.4 s).
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import { userStateFile } from '../config/user-state.js';

/** The newest answers kept per file; older ones are dropped. */
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

/**
 * `ask()`'s answer for `image`, remembered in the state file `name` by image id. An empty answer is not
 * remembered: it may be a failure.
 */
export async function rememberedImageAnswer(
  docker: Docker,
  image: string,
  where: { name: string; env: NodeJS.ProcessEnv },
  ask: () => Promise<string>,
): Promise<string> {
  const id = (await docker.getImage(image).inspect()).Id;
  const file = userStateFile(where.env, where.name);
  const known = await remembered(file);
  const cached = known[id];
  if (cached) return cached;
  const answer = await ask();
  if (answer) {
    const entries = Object.entries({ ...known, [id]: answer }).slice(-KEPT);
    const temporary = `${file}.${process.pid}.tmp`;
    await mkdir(path.dirname(file), { recursive: true })
      .then(() => writeFile(temporary, `${JSON.stringify(Object.fromEntries(entries), null, 2)}\n`))
      .then(() => rename(temporary, file))
      .catch(() => undefined);
  }
  return answer;
}
