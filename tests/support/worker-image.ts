import { existsSync } from 'node:fs';
import type Docker from 'dockerode';
import { resolveWorkerImage } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { imageWorkers } from '../../src/config/workers.js';
import { buildWorkerImage, resolveBaseImage } from '../../src/sandbox/image-builder.js';

const HOST_CA = '/etc/ssl/certs/ca-certificates.crt';

/**
 * The worker image the runner itself would use (built by scripts/setup.sh); a clear error when missing.
 * `workers` names the workers beside codex it must hold: that image is built (or reused) here, from the
 * layers setup.sh's image with every worker already holds, so it takes seconds.
 */
export async function builtWorkerImage(docker: Docker, workers: readonly string[] = []): Promise<string> {
  if (workers.length > 0) {
    const config = validateConfig([
      { source: 'test', values: { workers: Object.fromEntries(workers.map((type) => [type, {}])) } },
    ]);
    const built = await buildWorkerImage(docker, {
      baseImage: await resolveBaseImage(docker, config.sandbox.baseImage),
      ...imageWorkers(config),
      ...(existsSync(HOST_CA) ? { extraCaCertPath: HOST_CA } : {}),
    });
    return built.tag;
  }
  const image = await resolveWorkerImage(validateConfig([]));
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new Error(`No worker image ${image}: run \`bash scripts/setup.sh\` first.`);
  }
  return image;
}
