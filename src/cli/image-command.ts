/**
 * `agent-runner image build|tag`: builds the worker image (or reuses it) and prints the tag the runner uses.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { findGitRoot } from '../doctor/git-check.js';
import { readWorkerImageInputs, workerImageTag } from '../sandbox/worker-image.js';
import type { CommandContext } from './program.js';

interface BuildFlags {
  baseImage?: string;
  caCert?: string;
  force?: boolean;
  quiet?: boolean;
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
    .action(async (flags: BuildFlags) => {
      const { config, repoRoot } = await loadCommandConfig(context);
      const [{ createDockerClient, pingDocker }, { buildWorkerImage, resolveBaseImage }] = await Promise.all([
        import('../sandbox/docker-client.js'),
        import('../sandbox/image-builder.js'),
      ]);
      const docker = createDockerClient(context.env);
      await pingDocker(docker, context.env);
      const baseImage = flags.baseImage ?? (await resolveBaseImage(docker, config.sandbox.baseImage));
      const caCert = flags.caCert
        ? path.resolve(context.cwd, flags.caCert)
        : config.sandbox.extraCaCert && path.resolve(repoRoot, config.sandbox.extraCaCert);
      if (!flags.quiet) context.output.err(`Building the worker image from ${baseImage}...`);
      const result = await buildWorkerImage(docker, {
        baseImage,
        codexVersion: config.worker.codexVersion,
        ...(caCert ? { extraCaCertPath: caCert } : {}),
        force: Boolean(flags.force),
        ...(flags.quiet ? {} : { onProgress: (line: string) => context.output.err(line) }),
      });
      const id = result.imageId.replace(/^sha256:/, '').slice(0, 12);
      context.output.out(
        result.reused
          ? `${result.tag} (reused: already built from the same inputs, ${id})`
          : `${result.tag} (built, ${id})`,
      );
    });

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
        codexVersion: config.worker.codexVersion,
        baseImage: config.sandbox.baseImage,
      });
      context.output.out(workerImageTag(inputs));
    });
}

async function loadCommandConfig(context: CommandContext): Promise<{ config: Config; repoRoot: string }> {
  const repoRoot = (await findGitRoot(context.cwd)) ?? context.cwd;
  return { config: await loadConfig({ repoRoot, env: context.env }), repoRoot };
}
