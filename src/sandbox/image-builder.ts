/**
 * Building the worker image through the Docker engine (dockerode `buildImage` with a tar-fs context), with
 * live progress and reuse: an image whose tag exists and whose per-machine labels match is not rebuilt.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import tar from 'tar-fs';
import { CODEX_VERSION } from '../config/schema.js';
import { EnvironmentError } from '../errors.js';
import { VERSION } from '../version.js';
import {
  extraWorkerBuildArgs,
  readWorkerImageInputs,
  STATX_SHIM_CONTEXT_NAME,
  workerImageLabels,
  workerImageTag,
  type WorkerImageInputs,
} from './worker-image.js';

/** Labels whose values must match for an existing image to be reused (the tag already covers the rest). */
const REUSE_LABELS = ['agent-runner.base-image', 'agent-runner.extra-ca-sha256'] as const;

// eslint-disable-next-line no-control-regex -- matching the escape character is the point
const ANSI_COLOUR = /\u001b\[[0-9;]*m/g;

/** How many lines of build output an `image_build_failed` error carries. */
const ERROR_TAIL_LINES = 30;

export interface BuildWorkerImageOptions {
  /** The image the Dockerfile starts FROM (build arg BASE_IMAGE). */
  baseImage: string;
  /** Codex CLI version to install (build arg CODEX_VERSION); default the pinned one. */
  codexVersion?: string;
  /** Further workers to install, `type@version` (build args `<TYPE>_VERSION`). */
  extraWorkers?: readonly string[];
  /** A PEM bundle trusted inside the image (for TLS-inspecting proxies). */
  extraCaCertPath?: string;
  /** The bundle's content; wins over `extraCaCertPath`. */
  extraCa?: string;
  /** Another Dockerfile (default: the package's Dockerfile.worker). */
  dockerfilePath?: string;
  /** Dockerfile content; wins over `dockerfilePath` (tests build tiny variants with it). */
  dockerfile?: string;
  /** Rebuild even when a matching image exists. */
  force?: boolean;
  /** The base is a project's own image: its own tag (see WorkerImageInputs.projectBase). */
  projectBase?: boolean;
  /** Called with each line of build output as it arrives. */
  onProgress?: (line: string) => void;
}

export interface WorkerImageBuildResult {
  tag: string;
  imageId: string;
  /** True when an existing image was kept and nothing was built. */
  reused: boolean;
}

/** What the engine holds under a worker image's tag. */
export interface WorkerImageState {
  tag: string;
  /** Undefined when no image has the tag. */
  imageId?: string;
  labels: Record<string, string>;
  /** The image exists and was built from the same base image and CA bundle. */
  labelsMatch: boolean;
}

/** The base image scripts/ensure-docker.sh builds with debootstrap when no registry is reachable. */
export const LOCAL_BASE_IMAGE = 'agent-runner-base:bookworm';

/**
 * The base image to build from when the user did not name one: the configured image when the engine has it,
 * else the locally built LOCAL_BASE_IMAGE when present (the machine cannot pull, as ensure-docker.sh found),
 * else the configured image (the build will try to pull it).
 */
export async function resolveBaseImage(docker: Docker, configured: string): Promise<string> {
  const present = async (image: string) =>
    docker
      .getImage(image)
      .inspect()
      .then(
        () => true,
        () => false,
      );
  if (await present(configured)) return configured;
  if (configured !== LOCAL_BASE_IMAGE && (await present(LOCAL_BASE_IMAGE))) return LOCAL_BASE_IMAGE;
  return configured;
}

/** Resolves the build inputs from the options (reading the Dockerfile and the CA file). */
export async function resolveBuildInputs(options: BuildWorkerImageOptions): Promise<WorkerImageInputs> {
  const codexVersion = options.codexVersion ?? CODEX_VERSION;
  const read = await readWorkerImageInputs({
    codexVersion,
    ...(options.extraWorkers ? { extraWorkers: options.extraWorkers } : {}),
    baseImage: options.baseImage,
    ...(options.extraCa === undefined && options.extraCaCertPath
      ? { extraCaCertPath: options.extraCaCertPath }
      : {}),
    ...(options.dockerfile === undefined && options.dockerfilePath
      ? { dockerfilePath: options.dockerfilePath }
      : {}),
  }).catch((error: unknown) => {
    throw new EnvironmentError(
      'image_build_failed',
      `Cannot read the worker image inputs: ${(error as Error).message}. Check the --ca-cert / sandbox.extraCaCert path.`,
      { cause: error },
    );
  });
  return {
    ...read,
    dockerfile: options.dockerfile ?? read.dockerfile,
    extraCa: options.extraCa ?? read.extraCa,
    ...(options.projectBase ? { projectBase: true } : {}),
  };
}

/** Looks up the image under the inputs' tag and whether its labels match the inputs. */
export async function inspectWorkerImage(
  docker: Docker,
  inputs: WorkerImageInputs,
): Promise<WorkerImageState> {
  const tag = workerImageTag(inputs);
  let info: Docker.ImageInspectInfo;
  try {
    info = await docker.getImage(tag).inspect();
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return { tag, labels: {}, labelsMatch: false };
    throw error;
  }
  const labels = info.Config?.Labels ?? {};
  const wanted = workerImageLabels(inputs);
  const labelsMatch = REUSE_LABELS.every((key) => labels[key] === wanted[key]);
  return { tag, imageId: info.Id, labels, labelsMatch };
}

/**
 * Builds the worker image, or reuses it when its tag exists with matching labels (unless `force`).
 * A failed build throws EnvironmentError('image_build_failed') carrying the last lines of output.
 */
export async function buildWorkerImage(
  docker: Docker,
  options: BuildWorkerImageOptions,
): Promise<WorkerImageBuildResult> {
  const inputs = await resolveBuildInputs(options);
  const existing = await inspectWorkerImage(docker, inputs);
  if (!options.force && existing.imageId && existing.labelsMatch) {
    return { tag: existing.tag, imageId: existing.imageId, reused: true };
  }

  const contextDir = await mkdtemp(path.join(tmpdir(), 'agent-runner-image-'));
  try {
    await writeFile(path.join(contextDir, 'Dockerfile'), inputs.dockerfile);
    // The Dockerfile COPYs extra-ca.crt unconditionally; an empty file means "no extra CA".
    await writeFile(path.join(contextDir, 'extra-ca.crt'), inputs.extraCa);
    await writeFile(path.join(contextDir, STATX_SHIM_CONTEXT_NAME), inputs.statxShim ?? '');
    const stream = await docker
      .buildImage(contextStream(contextDir), {
        t: existing.tag,
        dockerfile: 'Dockerfile',
        buildargs: {
          BASE_IMAGE: inputs.baseImage,
          CODEX_VERSION: inputs.codexVersion,
          ...extraWorkerBuildArgs(inputs.extraWorkers),
        },
        labels: { ...workerImageLabels(inputs), 'agent-runner.version': VERSION },
        rm: true,
        forcerm: true,
      })
      .catch((error: unknown) => {
        throw buildFailed(existing.tag, `the engine refused the build: ${(error as Error).message}`, []);
      });
    await followBuild(stream, existing.tag, options.onProgress);
  } finally {
    await rm(contextDir, { recursive: true, force: true });
  }

  const built = await inspectWorkerImage(docker, inputs);
  if (!built.imageId) throw buildFailed(existing.tag, 'the build finished but the tag does not exist', []);
  return { tag: built.tag, imageId: built.imageId, reused: false };
}

export interface TaggedImageBuild {
  tag: string;
  /** Dockerfile content. */
  dockerfile: string;
  /** A directory sent as the build context (default: an empty one). The Dockerfile replaces its own. */
  contextDir?: string;
  /** Path of the Dockerfile inside contextDir, when it is the context's own (a user's Dockerfile). */
  dockerfileInContext?: string;
  buildargs?: Record<string, string>;
  labels: Record<string, string>;
  onProgress?: (line: string) => void;
  /** Files added to the context stream (name → content), never written into `contextDir`. */
  contextFiles?: Record<string, string>;
  /** What to do when the build fails, in place of the worker image's advice. */
  advice?: string;
}

/**
 * Builds one image under `tag` (a derived image: a toolchain layer, a project's own Dockerfile). The caller
 * chose a tag that names its inputs, so an existing tag is the same image: check before calling.
 */
export async function buildTaggedImage(docker: Docker, build: TaggedImageBuild): Promise<string> {
  const scratch =
    build.contextDir === undefined ? await mkdtemp(path.join(tmpdir(), 'agent-runner-image-')) : undefined;
  try {
    const contextDir = build.contextDir ?? (scratch as string);
    // The Dockerfile as given goes into the context stream unless it is the context's own file, unchanged.
    const files = {
      ...(build.dockerfileInContext === undefined ? { '.agent-runner.Dockerfile': build.dockerfile } : {}),
      ...build.contextFiles,
    };
    const stream = await docker
      .buildImage(contextStream(contextDir, files), {
        t: build.tag,
        dockerfile: build.dockerfileInContext ?? '.agent-runner.Dockerfile',
        buildargs: build.buildargs ?? {},
        labels: { ...build.labels, 'agent-runner.version': VERSION },
        rm: true,
        forcerm: true,
      })
      .catch((error: unknown) => {
        throw buildFailed(
          build.tag,
          `the engine refused the build: ${(error as Error).message}`,
          [],
          build.advice,
        );
      });
    await followBuild(stream, build.tag, build.onProgress, build.advice);
  } finally {
    if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  }
  const info = await docker.getImage(build.tag).inspect();
  return info.Id;
}

/**
 * The build context as a tar stream, with `files` added at its root (the directory itself is not written to).
 * tar-fs gives a streamx stream; dockerode wants a Node one.
 */
function contextStream(directory: string, files: Record<string, string> = {}): NodeJS.ReadableStream {
  const extra = Object.entries(files);
  const pack = tar.pack(directory, {
    // A file of the directory under a name added here is left out: the added one wins.
    ignore: (name: string) => extra.some(([file]) => path.relative(directory, name) === file),
    finalize: extra.length === 0,
    finish: (stream) => {
      if (extra.length === 0) return;
      let left = extra.length;
      for (const [name, content] of extra)
        stream.entry({ name, mode: 0o644 }, content, () => {
          left -= 1;
          if (left === 0) stream.finalize();
        });
    },
  });
  return Readable.from(pack, { objectMode: false });
}

/** One message of the engine's JSON build stream. */
interface BuildMessage {
  stream?: string;
  status?: string;
  id?: string;
  progress?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/** Reads the newline-delimited JSON stream, reports lines, and rejects on an `error` message. */
function followBuild(
  stream: NodeJS.ReadableStream,
  tag: string,
  onProgress: ((line: string) => void) | undefined,
  advice?: string,
): Promise<void> {
  const tail: string[] = [];
  const emit = (line: string) => {
    tail.push(line);
    if (tail.length > ERROR_TAIL_LINES) tail.shift();
    onProgress?.(line);
  };
  let buffered = '';
  let text = '';
  let failure: string | undefined;

  const handle = (raw: string) => {
    if (!raw.trim()) return;
    let message: BuildMessage;
    try {
      message = JSON.parse(raw) as BuildMessage;
    } catch {
      emit(raw);
      return;
    }
    if (message.error || message.errorDetail) {
      failure = message.errorDetail?.message ?? message.error ?? 'unknown error';
      if (text.trim()) emit(text.trimEnd());
      text = '';
      emit(failure);
      return;
    }
    if (message.stream) {
      // RUN output arrives in fragments (and stderr wrapped in colour codes): join them into whole lines.
      text += message.stream.replace(ANSI_COLOUR, '');
      let end = text.indexOf('\n');
      while (end >= 0) {
        const line = text.slice(0, end).trimEnd();
        if (line.trim()) emit(line);
        text = text.slice(end + 1);
        end = text.indexOf('\n');
      }
      return;
    }
    // Pull progress bars would print hundreds of lines; the status changes are enough.
    if (message.status && !message.progress)
      emit(message.id ? `${message.id}: ${message.status}` : message.status);
  };

  return new Promise<void>((resolve, reject) => {
    stream.on('data', (chunk: Buffer | string) => {
      buffered += chunk.toString();
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        handle(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
      }
    });
    stream.on('error', (error: Error) => reject(buildFailed(tag, error.message, tail, advice)));
    stream.on('end', () => {
      handle(buffered);
      if (text.trim()) emit(text.trimEnd());
      if (failure !== undefined) reject(buildFailed(tag, failure, tail, advice));
      else resolve();
    });
  });
}

function buildFailed(
  tag: string,
  reason: string,
  tail: readonly string[],
  advice?: string,
): EnvironmentError {
  const output = tail.length ? `\nLast lines of the build:\n  ${tail.join('\n  ')}` : '';
  return new EnvironmentError(
    'image_build_failed',
    `Building the ${advice ? 'image' : 'worker image'} ${tag} failed: ${reason}.${output}\n` +
      (advice ??
        'Check that the base image exists locally (`docker image ls`; `bash scripts/ensure-docker.sh` makes ' +
          'agent-runner-base:bookworm when no registry is reachable) and that the npm registry is reachable from ' +
          'containers (behind a TLS-inspecting proxy, give its CA: sandbox.extraCaCert in agent-runner.yaml, or ' +
          '`agent-runner image build --ca-cert FILE`, which later runs remember).'),
    { details: { tag, reason, outputTail: [...tail] } },
  );
}
