import type Docker from 'dockerode';
import { resolveWorkerImage } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';

/** The worker image the runner itself would use (built by scripts/setup.sh); a clear error when missing. */
export async function builtWorkerImage(docker: Docker): Promise<string> {
  const image = await resolveWorkerImage(validateConfig([]));
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new Error(`No worker image ${image}: run \`bash scripts/setup.sh\` first.`);
  }
  return image;
}
