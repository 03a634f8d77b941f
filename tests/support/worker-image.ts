import type Docker from 'dockerode';
import { resolveWorkerImage } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';

/**
 * The worker image the runner itself would use (built by scripts/setup.sh); a clear error when missing.
 * `workers` names the workers beside codex it must hold (setup.sh builds the one with claude too).
 */
export async function builtWorkerImage(docker: Docker, workers: readonly string[] = []): Promise<string> {
  const blocks = Object.fromEntries(workers.map((type) => [type, {}]));
  const image = await resolveWorkerImage(
    validateConfig(workers.length > 0 ? [{ source: 'test', values: { workers: blocks } }] : []),
  );
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new Error(`No worker image ${image}: run \`bash scripts/setup.sh\` first.`);
  }
  return image;
}
