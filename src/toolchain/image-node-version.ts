/**
 * The Node version an image runs, asked once per image id (image-answers.ts) and remembered in
 * `image-node-versions.json`.
 */
import type Docker from 'dockerode';
import { rememberedImageAnswer } from './image-answers.js';
import { runInImage } from './run-in-image.js';

export const IMAGE_NODE_VERSIONS_FILE = 'image-node-versions.json';

/** `node --version` of `image` (`v20.11.1`), or '' when it has no Node (not remembered: it may be a failure). */
export async function imageNodeVersion(
  docker: Docker,
  image: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  return rememberedImageAnswer(docker, image, { name: IMAGE_NODE_VERSIONS_FILE, env }, async () =>
    (await runInImage(docker, image, ['node', '--version'])).trim(),
  );
}
