/**
 * The worker image's identity. Its tag carries the codex version and a hash of the Dockerfile, the files it
 * COPYs from the package (the statx shim's source) and the codex version, so `agent-runner run` finds the image from the package alone, an unchanged Dockerfile reuses the
 * image and a changed one makes a new tag (and so a rebuild). The base image and the extra CA bundle are build
 * arguments that differ per machine (a registry image, or one made with debootstrap): they are recorded as
 * labels (`agent-runner.base-image`, `agent-runner.extra-ca-sha256`) and a build whose labels differ rebuilds
 * the same tag.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PACKAGE_ROOT } from '../version.js';

export const WORKER_IMAGE_REPOSITORY = 'agent-runner-worker';
export const DOCKERFILE_NAME = 'Dockerfile.worker';
/** The statx shim's source (image/statx-shim.c): Dockerfile.worker COPYs it from the context under this name. */
export const STATX_SHIM_SOURCE = path.join('image', 'statx-shim.c');
export const STATX_SHIM_CONTEXT_NAME = 'statx-shim.c';
/** Label of a worker image: the sha256 of the extra CA bundle it trusts ({@link EMPTY_SHA256}: none). */
export const EXTRA_CA_LABEL = 'agent-runner.extra-ca-sha256';
export const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

/** Label on every derived image (a toolchain layer, a project base): what it is, for `image ls`. */
export const DERIVED_LABEL = 'agent-runner.derived';

export interface WorkerImageInputs {
  dockerfile: string;
  /** The statx shim's C source the Dockerfile compiles (empty: a Dockerfile that does not use it). */
  statxShim?: string;
  codexVersion: string;
  /**
   * The workers beside codex the image holds, as `type@version` (sorted; empty: codex only). One image per
   * set of configured workers: a task runs every worker it may choose in its one sandbox.
   */
  extraWorkers?: readonly string[];
  baseImage: string;
  /** Content of the extra CA bundle, empty when none. */
  extraCa: string;
  /**
   * A worker layered on a project's own base image: the base and the CA are part of the tag, so each
   * project's worker image has its own tag and never replaces the default one.
   */
  projectBase?: boolean;
}

/** Reads the inputs of a worker image build. */
export async function readWorkerImageInputs(options: {
  codexVersion: string;
  extraWorkers?: readonly string[];
  baseImage: string;
  extraCaCertPath?: string;
  dockerfilePath?: string;
}): Promise<WorkerImageInputs> {
  const dockerfile = await readFile(
    options.dockerfilePath ?? path.join(PACKAGE_ROOT, DOCKERFILE_NAME),
    'utf8',
  );
  const statxShim = await readFile(path.join(PACKAGE_ROOT, STATX_SHIM_SOURCE), 'utf8');
  const extraCa = options.extraCaCertPath ? await readFile(options.extraCaCertPath, 'utf8') : '';
  return {
    dockerfile,
    statxShim,
    codexVersion: options.codexVersion,
    ...(options.extraWorkers && options.extraWorkers.length > 0
      ? { extraWorkers: [...options.extraWorkers].sort() }
      : {}),
    baseImage: options.baseImage,
    extraCa,
  };
}

/** The build arguments that install the extra workers (`CLAUDE_VERSION=2.1.330`); unset ones install nothing. */
export function extraWorkerBuildArgs(extraWorkers: readonly string[] = []): Record<string, string> {
  const args: Record<string, string> = {};
  for (const entry of extraWorkers) {
    const [type, version] = entry.split('@') as [string, string | undefined];
    if (version) args[`${type.toUpperCase()}_VERSION`] = version;
  }
  return args;
}

/** `agent-runner-worker:codex-0.169.0-<12 hex>`, `...:codex-0.169.0-claude-2.1.330-<12 hex>` */
export function workerImageTag(inputs: WorkerImageInputs): string {
  const hash = createHash('sha256').update(inputs.dockerfile).update('\0').update(inputs.codexVersion);
  if (inputs.statxShim) hash.update('\0statx-shim\0').update(inputs.statxShim);
  const extra = inputs.extraWorkers ?? [];
  if (extra.length > 0) hash.update('\0').update(extra.join(','));
  if (inputs.projectBase) hash.update('\0').update(inputs.baseImage).update('\0').update(inputs.extraCa);
  const kind = inputs.projectBase ? 'project-codex' : 'codex';
  const workers = [`${inputs.codexVersion}`, ...extra.map((entry) => entry.replace('@', '-'))].join('-');
  return `${WORKER_IMAGE_REPOSITORY}:${kind}-${workers}-${hash.digest('hex').slice(0, 12)}`;
}

/** Labels that say which per-machine inputs an image was built from. */
export function workerImageLabels(inputs: WorkerImageInputs): Record<string, string> {
  return {
    'agent-runner.base-image': inputs.baseImage,
    [EXTRA_CA_LABEL]: createHash('sha256').update(inputs.extraCa).digest('hex'),
    'agent-runner.codex-version': inputs.codexVersion,
    'agent-runner.workers': ['codex', ...(inputs.extraWorkers ?? [])].join(' '),
  };
}
