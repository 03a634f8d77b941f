/**
 * The toolchain a repository declares, read from its own files (never run): the Node version range
 * (`.nvmrc`, `.node-version`, `engines.node`, in that order: the version files are the more specific), the
 * package manager (`packageManager: "pnpm@9.1.0"`), and a dev container (`.devcontainer/devcontainer.json`).
 * Files are attacker-controlled text: only plain values are taken, bounded, and validated before use.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import semver from 'semver';
import { lockfilePackageManager } from '../workspace/checks/detect-dod-checks.js';
import { lockfilePnpm, lockfileYarn } from './package-manager-from-lockfile.js';

export interface PackageManagerSpec {
  name: 'pnpm' | 'yarn' | 'npm';
  version: string;
  /** What decided it when not package.json's `packageManager` (src/toolchain/package-manager-from-lockfile.ts). */
  source?: string;
  /**
   * yarn 2+: `.yarnrc.yml`'s `nodeLinker`. That file stays out of the sandbox (it may hold tokens), so the
   * toolchain layer sets it as YARN_NODE_LINKER for the install and every later `yarn run`.
   */
  nodeLinker?: 'node-modules' | 'pnpm' | 'pnp';
}

export interface DevcontainerSpec {
  /** The file, relative to the repository root. */
  file: string;
  /** `image`, when it names one. */
  image?: string;
  /** `build.dockerfile` resolved against the file's directory, relative to the repository root. */
  dockerfile?: string;
  /** `build.context` likewise (default: the file's directory). */
  context?: string;
  /** `postCreateCommand` as one shell command (an array is joined with spaces). */
  postCreateCommand?: string;
}

export interface DeclaredToolchain {
  /** A semver range of Node, and the file it came from. */
  node?: { range: string; source: string };
  packageManager?: PackageManagerSpec;
  devcontainer?: DevcontainerSpec;
}

/** A repository file's text, or undefined when it is missing, unreadable or longer than `limit` characters. */
export async function readText(file: string, limit = 256 * 1024): Promise<string | undefined> {
  try {
    const text = await readFile(file, 'utf8');
    return text.length > limit ? undefined : text;
  } catch {
    return undefined;
  }
}

/** A range from a version file: `20`, `v20.11.1`, `lts/*` (not a version: ignored), `>=20`. */
export function nodeRangeOf(text: string): string | undefined {
  const value =
    text
      .trim()
      .split(/\s+/)[0]
      ?.replace(/^v(?=\d)/, '') ?? '';
  if (value === '' || value.length > 100) return undefined;
  return semver.validRange(value) === null ? undefined : value;
}

/** `pnpm@9.1.0+sha512...` → `{ name: 'pnpm', version: '9.1.0' }`; anything else undefined. */
export function packageManagerOf(value: unknown): PackageManagerSpec | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(pnpm|yarn|npm)@(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)(?:\+.*)?$/.exec(value.trim());
  if (!match?.[1] || !match[2]) return undefined;
  return { name: match[1] as PackageManagerSpec['name'], version: match[2] };
}

function insideRepository(root: string, relative: string): string | undefined {
  const resolved = path.resolve(root, relative);
  const back = path.relative(root, resolved);
  return back.startsWith('..') || path.isAbsolute(back) ? undefined : back || '.';
}

async function readDevcontainer(root: string): Promise<DevcontainerSpec | undefined> {
  for (const file of ['.devcontainer/devcontainer.json', '.devcontainer.json']) {
    const text = await readText(path.join(root, file));
    if (text === undefined) continue;
    const raw: unknown = parseJsonc(text);
    if (typeof raw !== 'object' || raw === null) return { file };
    const data = raw as Record<string, unknown>;
    const dir = path.dirname(file);
    const build = (typeof data.build === 'object' && data.build !== null ? data.build : {}) as Record<
      string,
      unknown
    >;
    const dockerfile =
      typeof build.dockerfile === 'string'
        ? insideRepository(root, path.join(dir, build.dockerfile))
        : typeof data.dockerFile === 'string'
          ? insideRepository(root, path.join(dir, data.dockerFile))
          : undefined;
    const context =
      typeof build.context === 'string' ? insideRepository(root, path.join(dir, build.context)) : dir;
    const post = data.postCreateCommand;
    const postCreateCommand =
      typeof post === 'string'
        ? post
        : Array.isArray(post) && post.every((part) => typeof part === 'string')
          ? post.join(' ')
          : undefined;
    return {
      file,
      ...(typeof data.image === 'string' ? { image: data.image } : {}),
      ...(dockerfile ? { dockerfile, context: context ?? dir } : {}),
      ...(postCreateCommand ? { postCreateCommand } : {}),
    };
  }
  return undefined;
}

/** Reads what the repository at `root` declares. */
export async function detectToolchain(root: string): Promise<DeclaredToolchain> {
  const declared: DeclaredToolchain = {};
  for (const file of ['.nvmrc', '.node-version']) {
    const text = await readText(path.join(root, file), 1024);
    const range = text === undefined ? undefined : nodeRangeOf(text);
    if (range !== undefined) {
      declared.node = { range, source: file };
      break;
    }
  }
  const manifestText = await readText(path.join(root, 'package.json'));
  if (manifestText !== undefined) {
    let manifest: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(manifestText);
      if (typeof parsed === 'object' && parsed !== null) manifest = parsed as Record<string, unknown>;
    } catch {
      // an invalid package.json declares nothing here; the project's own tools will say why
    }
    const engines = manifest.engines as Record<string, unknown> | undefined;
    const enginesNode =
      typeof engines?.node === 'string' ? nodeRangeOf(engines.node.replace(/\s+/g, ' ')) : undefined;
    if (declared.node === undefined && typeof engines?.node === 'string' && semver.validRange(engines.node)) {
      declared.node = { range: engines.node.trim(), source: 'package.json engines.node' };
    } else if (declared.node === undefined && enginesNode !== undefined) {
      declared.node = { range: enginesNode, source: 'package.json engines.node' };
    }
    const packageManager = packageManagerOf(manifest.packageManager);
    if (packageManager) declared.packageManager = packageManager;
    // No packageManager field, but a lockfile decides the package manager (the DoD and the set-up run it):
    // agent-runner chose it, so it provides it, at the version the lockfile calls for.
    else {
      const name = lockfilePackageManager(root).name;
      const found =
        name === 'yarn' ? await lockfileYarn(root) : name === 'pnpm' ? await lockfilePnpm(root) : undefined;
      if (found && (name === 'yarn' || name === 'pnpm'))
        declared.packageManager = { name, version: found.version, source: found.source };
    }
    if (declared.packageManager?.name === 'yarn') {
      const linker = /^nodeLinker:\s*["']?(node-modules|pnpm|pnp)["']?\s*$/m.exec(
        (await readText(path.join(root, '.yarnrc.yml'), 64 * 1024)) ?? '',
      )?.[1];
      if (linker) declared.packageManager.nodeLinker = linker as PackageManagerSpec['nodeLinker'];
    }
  }
  const devcontainer = await readDevcontainer(root);
  if (devcontainer) declared.devcontainer = devcontainer;
  return declared;
}
