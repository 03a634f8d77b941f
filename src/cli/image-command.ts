/**
 * `agent-runner image build|tag`: builds the worker image (or reuses it) and prints the tag the runner uses.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { findGitRoot } from '../doctor/git-check.js';
import type Docker from 'dockerode';
import { rememberCa, rememberedCa } from '../sandbox/remembered-ca.js';
import { DERIVED_LABEL, readWorkerImageInputs, workerImageTag } from '../sandbox/worker-image.js';
import type { CommandContext } from './program.js';
import { imageWorkers } from '../config/workers.js';
import { UserError } from '../errors.js';
import { isWorkerType, WORKER_TYPES } from '../worker/worker-kinds.js';

interface BuildFlags {
  baseImage?: string;
  caCert?: string;
  force?: boolean;
  quiet?: boolean;
  workerOnly?: boolean;
  worker?: string[];
}

/** Registers `image build` and `image tag` on the program. */
export function registerImageCommand(program: Command, context: CommandContext): void {
  const image = program.command('image').description('Build or name the worker image');

  image
    .command('build')
    .description('Build the worker image, or reuse it when it is already built from the same inputs')
    .option(
      '--base-image <image>',
      'image to build FROM (default: sandbox.baseImage, or agent-runner-base:bookworm when only that is present)',
    )
    .option('--ca-cert <file>', 'extra CA bundle to trust in the image (default: sandbox.extraCaCert)')
    .option('--force', 'rebuild even when a matching image exists')
    .option('--quiet', 'print only the result')
    .option(
      '--worker-only',
      "build the worker image only, not the toolchain of the repository it runs in (scripts/setup.sh uses it: agent-runner's own checkout is not a project to work on)",
    )
    .option(
      '--worker <type>',
      `also install this worker (${WORKER_TYPES.join(', ')}) as if a workers.<type> block configured it; repeatable`,
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .action((flags: BuildFlags) => buildImage(context, flags));

  image
    .command('ls')
    .description('List the worker images and the derived images built for projects')
    .action(async () => {
      const { createDockerClient, pingDocker } = await import('../sandbox/docker-client.js');
      const docker = createDockerClient(context.env);
      await pingDocker(docker, context.env);
      for (const line of await listWorkerImages(docker)) context.output.out(line);
    });

  image
    .command('rm <tags...>')
    .description('Remove worker or derived images by tag (never an image a container still uses)')
    .action((tags: string[]) => removeImages(context, tags));

  image
    .command('tag')
    .description('Print the worker image tag the runner uses (sandbox.image when set)')
    .action(async () => {
      const { config } = await loadCommandConfig(context);
      if (config.sandbox.image) {
        context.output.out(config.sandbox.image);
        return;
      }
      const inputs = await readWorkerImageInputs({
        ...imageWorkers(config),
        baseImage: config.sandbox.baseImage,
      });
      context.output.out(workerImageTag(inputs));
    });
}

/** `image build`: the worker image, then (unless `--worker-only`) the project's toolchain on top. */
async function buildImage(context: CommandContext, flags: BuildFlags): Promise<void> {
  const loaded = await loadCommandConfig(context);
  const { repoRoot } = loaded;
  const config = withWorkers(loaded.config, flags.worker ?? []);
  const [
    { createDockerClient, pingDocker },
    { buildWorkerImage, resolveBaseImage },
    { IMAGE_EXTRA_CA_PATH, runInImage },
    { resolveTaskImage },
    { caOfFile, caOfImage },
  ] = await Promise.all([
    import('../sandbox/docker-client.js'),
    import('../sandbox/image-builder.js'),
    import('../toolchain/run-in-image.js'),
    import('../toolchain/toolchain-image.js'),
    import('../toolchain/extra-ca.js'),
  ]);
  const docker = createDockerClient(context.env);
  await pingDocker(docker, context.env);
  const baseImage = flags.baseImage ?? (await resolveBaseImage(docker, config.sandbox.baseImage));
  const caCert = await chooseCaCert(context, config, repoRoot, flags);
  if (caCert && !flags.caCert && !config.sandbox.extraCaCert && !flags.quiet)
    context.output.err(`Trusting the CA bundle remembered from the last build: ${caCert}`);
  if (!flags.quiet) context.output.err(`Building the worker image from ${baseImage}...`);
  const result = await buildWorkerImage(docker, {
    baseImage,
    ...imageWorkers(config),
    ...(caCert ? { extraCaCertPath: caCert } : {}),
    force: Boolean(flags.force),
    ...(flags.quiet ? {} : { onProgress: (line: string) => context.output.err(line) }),
  });
  if (caCert) await rememberCa(context.env, caCert);
  const id = result.imageId.replace(/^sha256:/, '').slice(0, 12);
  const summary = result.reused
    ? `${result.tag} (reused: already built from the same inputs, ${id})`
    : `${result.tag} (built, ${id})`;
  if (flags.workerOnly) {
    context.output.out(summary);
    return;
  }
  // The project's own toolchain (sandbox.dockerfile, a dev container, the Node it declares) on top; its
  // Dockerfile's stages and the worker on it trust the same CA bundle.
  const extraCa = caCert
    ? await caOfFile(caCert)
    : await caOfImage(docker, result.tag, () => runInImage(docker, result.tag, ['cat', IMAGE_EXTRA_CA_PATH]));
  const task = await resolveTaskImage({
    docker,
    config,
    repoRoot,
    extraCa,
    workerImage: config.sandbox.image ?? result.tag,
    buildWorkerOn: async (base) =>
      (
        await buildWorkerImage(docker, {
          baseImage: base,
          ...imageWorkers(config),
          projectBase: true,
          ...(extraCa ? { extraCa: await extraCa.content() } : {}),
          ...(flags.quiet ? {} : { onProgress: (line: string) => context.output.err(line) }),
        })
      ).tag,
    ...(flags.quiet ? {} : { onProgress: (line: string) => context.output.err(line) }),
  });
  for (const layer of task.layers) context.output.out(`${task.image} (toolchain: ${layer})`);
  context.output.out(summary);
}

/** The CA bundle the build trusts: the flag's, the config's, or the one the last build trusted. */
async function chooseCaCert(
  context: CommandContext,
  config: Config,
  repoRoot: string,
  flags: BuildFlags,
): Promise<string | undefined> {
  // The bundle the last build trusted is remembered: a build with no flag trusts it again.
  return flags.caCert
    ? path.resolve(context.cwd, flags.caCert)
    : config.sandbox.extraCaCert
      ? path.resolve(repoRoot, config.sandbox.extraCaCert)
      : await rememberedCa(context.env);
}

/** `image rm`: removes agent-runner's own images by tag; other tags are refused. */
async function removeImages(context: CommandContext, tags: string[]): Promise<void> {
  const { createDockerClient, pingDocker } = await import('../sandbox/docker-client.js');
  const docker = createDockerClient(context.env);
  await pingDocker(docker, context.env);
  for (const tag of tags) {
    if (!/^agent-runner-(worker|project):/.test(tag)) {
      context.output.err(
        `agent-runner: ${tag} is not an agent-runner image (agent-runner-worker:* or agent-runner-project:*).`,
      );
      context.setExitCode(2);
      continue;
    }
    try {
      await docker.getImage(tag).remove();
      context.output.out(`removed ${tag}`);
    } catch (error) {
      context.output.err(`agent-runner: could not remove ${tag}: ${(error as Error).message.split('\n')[0]}`);
      context.setExitCode(4);
    }
  }
}

/** One line per image: tag, size, created, what it is. */
async function listWorkerImages(docker: Docker): Promise<string[]> {
  const images = await docker.listImages();
  const lines: string[] = [];
  for (const info of images) {
    for (const tag of info.RepoTags ?? []) {
      if (!/^agent-runner-(worker|project):/.test(tag)) continue;
      const labels = info.Labels ?? {};
      const kind =
        labels[DERIVED_LABEL] ?? (tag.includes(':project-codex-') ? 'worker on a project base' : 'worker');
      const from =
        labels['agent-runner.from'] ??
        labels['agent-runner.base-image'] ??
        labels['agent-runner.source'] ??
        '';
      lines.push(
        `${tag}  ${Math.round(info.Size / 1e6)} MB  ${new Date(info.Created * 1000).toISOString().slice(0, 16)}  ${kind}${from ? ` (from ${from})` : ''}`,
      );
    }
  }
  return lines.length ? lines.sort() : ['No agent-runner images. Build one with `agent-runner image build`.'];
}

async function loadCommandConfig(context: CommandContext): Promise<{ config: Config; repoRoot: string }> {
  const repoRoot = (await findGitRoot(context.cwd)) ?? context.cwd;
  return { config: await loadConfig({ repoRoot, env: context.env }), repoRoot };
}

/** The config with a `workers.<type>` block for each `--worker` that has none (an unknown type is refused). */
function withWorkers(config: Config, types: readonly string[]): Config {
  const workers = { ...config.workers };
  for (const type of types) {
    if (!isWorkerType(type))
      throw new UserError(
        'usage',
        `Unknown worker type "${type}" for --worker; use one of: ${WORKER_TYPES.join(', ')}.`,
      );
    workers[type] ??= { extraArgs: [] };
  }
  return { ...config, workers };
}
