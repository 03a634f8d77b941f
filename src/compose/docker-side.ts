/**
 * The Docker side of a task's start: the engine answers, this repository's orphaned sandboxes are swept, the
 * worker image is there, and the task's image (the toolchain the repository declares) is resolved or built.
 * It runs while the Meta-agent plans.
 */
import path from 'node:path';
import type Docker from 'dockerode';
import type { Config } from '../config/schema.js';
import type { SandboxRuntime } from '../core/ports.js';
import { EnvironmentError } from '../errors.js';
import {
  findDeadOwnerSandboxes,
  listLabelledSandboxes,
  removeSandboxes,
} from '../lifecycle/orphan-sandboxes.js';
import { readWorkerImageInputs, workerImageTag } from '../sandbox/worker-image.js';
import { imageWorkers } from '../config/workers.js';
import type { DetectedCommand } from '../core/detected-command.js';
import type { SandboxRuntimeChoice } from '../core/records.js';
import { resolveSetup } from '../workspace/checks/detect-setup.js';

/** The worker image the config asks for: `sandbox.image`, else the tag of the package's Dockerfile. */
export async function resolveWorkerImage(config: Config): Promise<string> {
  if (config.sandbox.image) return config.sandbox.image;
  const inputs = await readWorkerImageInputs({
    ...imageWorkers(config),
    baseImage: config.sandbox.baseImage,
  });
  return workerImageTag(inputs);
}

/**
 * The image of a set of workers beside codex is built the first time a configuration asks for it (codex's own
 * image comes from `scripts/setup.sh` or `image build`; its absence is an error with that fix).
 */
async function buildWorkersImage(
  docker: Docker,
  config: Config,
  workerImage: string,
  caPath: string | undefined,
  onNotice: (line: string) => void,
): Promise<void> {
  const { extraWorkers } = imageWorkers(config);
  if (config.sandbox.image || extraWorkers.length === 0 || (await imageExists(docker, workerImage))) return;
  const { buildWorkerImage, resolveBaseImage } = await import('../sandbox/image-builder.js');
  onNotice(
    `building the worker image with ${extraWorkers.join(', ')} (once; reused while its inputs are unchanged)`,
  );
  await buildWorkerImage(docker, {
    baseImage: await resolveBaseImage(docker, config.sandbox.baseImage),
    ...imageWorkers(config),
    ...(caPath ? { extraCaCertPath: caPath } : {}),
  });
}

async function imageExists(docker: Docker, image: string): Promise<boolean> {
  return docker
    .getImage(image)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

async function ensureImage(docker: Docker, image: string): Promise<void> {
  try {
    await docker.getImage(image).inspect();
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) {
      throw new EnvironmentError(
        'image_missing',
        `The worker image ${image} is not built. Build it with \`agent-runner image build\` (or \`bash scripts/setup.sh\` in the agent-runner checkout).`,
      );
    }
    throw error;
  }
}

/**
 * Stops every container of this task that still runs (one kept with --keep-sandbox by an earlier attempt):
 * it mounts the sandbox repository and CODEX_HOME that this attempt's preparation changes on the host, and a
 * process left in it could swap a file for a link to a host file while the host's permission pass works. The
 * container is stopped, not removed (its files and the person's way into it stay: `docker start`); it is not
 * reused (this attempt makes its own) and not started again by agent-runner. The task lock is held, so no
 * other runner uses it. Runs before the workspace's preparation (the loop's ports wait for the Docker side).
 */
async function haltTaskSandboxes(
  runtime: SandboxRuntime,
  repoRoot: string,
  taskId: string,
  onNotice: (text: string) => void,
): Promise<void> {
  const mine = (await listLabelledSandboxes(runtime, { repoRoot })).filter(
    (sandbox) => sandbox.taskId === taskId && sandbox.state !== 'exited' && sandbox.state !== 'dead',
  );
  for (const sandbox of mine) {
    if (runtime.halt) await runtime.halt(sandbox.id);
    else await runtime.remove(sandbox.id);
    onNotice(
      `stopped container ${sandbox.name} of task ${taskId}${sandbox.kept ? ' (kept with --keep-sandbox)' : ''} before changing the files it mounts; ` +
        `its files stay (\`docker start ${sandbox.name}\` to enter it again, agent-runner gc removes it)`,
    );
  }
}

/**
 * `sandbox.setup` when set (`[]` included), else what the repository's lockfile and manifests call for, on
 * `image` (whose python3 decides whether a Python project gets a virtual environment).
 */
async function taskSetup(
  where: { config: Config; env: NodeJS.ProcessEnv; repoRoot: string },
  docker: Docker,
  image: string,
  onNotice: (text: string) => void,
): Promise<{ commands: string[]; detected: DetectedCommand[] }> {
  const { imagePython } = await import('../toolchain/image-python.js');
  const resolved = await resolveSetup(where.config.sandbox.setup, where.repoRoot, {
    imagePython: () => imagePython(docker, image, where.env),
    onNotice,
  });
  const detected = resolved.source === 'detected' ? resolved.commands : [];
  for (const item of detected)
    onNotice(
      `sandbox set-up detected: \`${item.command}\` (from ${item.detectedFrom}; sandbox.setup overrides it)`,
    );
  return { commands: resolved.commands.map((item) => item.command), detected };
}

/** Removes this repository's containers whose runner died (kill -9, a crash, the engine lost mid-run). */
async function sweepOrphans(
  runtime: SandboxRuntime,
  repoRoot: string,
  taskId: string | undefined,
  onNotice: (text: string) => void,
): Promise<void> {
  const { orphans, kept } = await findDeadOwnerSandboxes(runtime, { repoRoot });
  for (const sandbox of kept.filter((sandbox) => sandbox.taskId !== taskId))
    onNotice(
      `left container ${sandbox.name} of task ${sandbox.taskId} alone: it was kept with --keep-sandbox (agent-runner gc removes it)`,
    );
  if (orphans.length > 0) {
    const swept = await removeSandboxes(runtime, orphans);
    for (const sandbox of swept.removed)
      onNotice(
        `removed container ${sandbox.name} of task ${sandbox.taskId}, left by pid ${sandbox.pid} (no longer running)`,
      );
  }
}

/** The runtime of the task's containers (`sandbox.runtime` and what the engine offers), said as a notice. */
async function taskRuntime(
  docker: Docker,
  config: Config,
  onNotice: (text: string) => void,
): Promise<SandboxRuntimeChoice> {
  const { resolveContainerRuntime } = await import('../sandbox/container-runtime.js');
  const choice = await resolveContainerRuntime(docker, config.sandbox);
  // What was asked for, got, goes without a word (runc asked; `auto`, the default, on an engine with runsc):
  // the note and the summary record it either way. A fallback, or runsc asked by name, is said.
  const asAsked =
    (config.sandbox.runtime === 'runc' && choice.runtime === 'runc') ||
    (config.sandbox.runtime === 'auto' && choice.runtime === 'runsc');
  if (!asAsked) onNotice(`sandbox runtime: ${choice.runtime} (${choice.reason})`);
  return choice;
}

/** What the Docker side settles for a task: its image, set-up commands and runtime. */
export interface TaskDockerSetting {
  image: string;
  setup: string[];
  setupDetected: DetectedCommand[];
  containerRuntime: SandboxRuntimeChoice;
}

/**
 * Pings the engine, chooses the runtime of the task's containers (`sandbox.runtime`), sweeps this repository's
 * orphaned sandboxes, checks the worker image and resolves the task's image (the toolchain the repository
 * declares); returns them and the set-up commands to run.
 */
export async function startDockerSide(
  docker: Docker,
  runtime: SandboxRuntime,
  where: { config: Config; env: NodeJS.ProcessEnv; repoRoot: string; taskId?: string },
  onNotice: (text: string) => void = () => {},
): Promise<TaskDockerSetting> {
  const { config, env, repoRoot } = where;
  const { pingDocker } = await import('../sandbox/docker-client.js');
  await pingDocker(docker, env);
  const containerRuntime = await taskRuntime(docker, config, onNotice);
  await sweepOrphans(runtime, repoRoot, where.taskId, onNotice);
  // What still runs of this task now (a kept container, one the sweep could not remove) is stopped.
  if (where.taskId !== undefined) await haltTaskSandboxes(runtime, repoRoot, where.taskId, onNotice);
  const workerImage = await resolveWorkerImage(config);
  // Imported here like dockerode: tar-fs and the image builder are not needed before the plan request.
  const [
    { buildWorkerImage },
    { rememberedCa },
    { IMAGE_EXTRA_CA_PATH, runInImage },
    { resolveTaskImage },
    { caOfFile, caOfImage },
  ] = await Promise.all([
    import('../sandbox/image-builder.js'),
    import('../sandbox/remembered-ca.js'),
    import('../toolchain/run-in-image.js'),
    import('../toolchain/toolchain-image.js'),
    import('../toolchain/extra-ca.js'),
  ]);
  // The CA: configured, else remembered from the last build, else the one the worker image trusts (named by
  // its label; its content read from the image only when a build needs it).
  const caPath = config.sandbox.extraCaCert
    ? path.resolve(repoRoot, config.sandbox.extraCaCert)
    : await rememberedCa(env);
  await buildWorkersImage(docker, config, workerImage, caPath, onNotice);
  await ensureImage(docker, workerImage);
  const extraCa = caPath
    ? await caOfFile(caPath)
    : await caOfImage(docker, workerImage, () =>
        runInImage(docker, workerImage, ['cat', IMAGE_EXTRA_CA_PATH]),
      );
  // The toolchain the repository declares: a derived image built once (own tag from its inputs) and reused.
  const taskImage = await resolveTaskImage({
    docker,
    config,
    repoRoot,
    env,
    workerImage,
    extraCa,
    buildWorkerOn: async (base) => {
      onNotice(`building the worker on ${base} (once; reused while its inputs are unchanged)`);
      const built = await buildWorkerImage(docker, {
        baseImage: base,
        ...imageWorkers(config),
        projectBase: true,
        ...(extraCa ? { extraCa: await extraCa.content() } : {}),
      });
      return built.tag;
    },
    onProgress: (line) => onNotice(line),
  });
  const image = taskImage.image;
  for (const layer of taskImage.layers) onNotice(`sandbox toolchain: ${layer} (image ${image})`);
  const setup = await taskSetup(where, docker, image, onNotice);
  return {
    image,
    setup: [...taskImage.setup, ...setup.commands],
    setupDetected: setup.detected,
    containerRuntime,
  };
}
