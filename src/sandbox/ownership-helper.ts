/**
 * Applies an ownership plan to a host directory from a short-lived helper container, for a runner that is not
 * root and so cannot chown on the host. The helper runs a fixed script over a manifest (no model or worker
 * text is ever executed; a few batched chown/chmod calls), as root with only CAP_CHOWN, CAP_FOWNER and CAP_DAC_OVERRIDE, no network, a
 * read-only root filesystem, and only two mounts: the directory to fix and the manifest (read-only). Symlinks
 * are chowned with -h and never chmod-ed, so a link planted in the directory cannot redirect it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import type { OwnershipEntry } from '../core/ports.js';
import { EnvironmentError } from '../errors.js';
import { groupPlan } from '../workspace/permissions.js';
import type { SandboxOwner } from './container-options.js';
import { runOneShotContainer } from './one-shot-container.js';

// One `chown -h` per owner and one `chmod` per mode over NUL-separated lists (a few processes, not one per
// file). A batch that fails (a path already gone, e.g. while a failed delete is still running) is redone
// entry by entry, skipping what no longer exists and failing on anything else.
const SCRIPT = [
  'set -eu',
  'cd /w',
  'each() { list=$1; shift',
  '  xargs -0 -r "$@" < "$list" 2>/dev/null && return 0',
  "  while IFS= read -r -d '' target; do",
  '    [ -e "$target" ] || [ -L "$target" ] || continue',
  '    "$@" "$target"',
  '  done < "$list"',
  '}',
  'for list in /m/chown-*; do [ -e "$list" ] || continue; each "$list" chown -h -- "${list#/m/chown-}"; done',
  'for list in /m/chmod-*; do [ -e "$list" ] || continue; each "$list" chmod -- "${list#/m/chmod-}"; done',
].join('\n');

/** The manifest files: `chown-<uid>:<gid>` and `chmod-<octal mode>`, each a NUL-separated list of paths. */
export function ownershipManifest(entries: readonly OwnershipEntry[]): Map<string, Buffer> {
  const grouped = groupPlan(entries);
  const files = new Map<string, Buffer>();
  const list = (paths: string[]) => Buffer.from(`${paths.join('\0')}\0`, 'utf8');
  for (const [owner, paths] of grouped.chown) files.set(`chown-${owner}`, list(paths));
  for (const [mode, paths] of grouped.chmod) files.set(`chmod-${mode}`, list(paths));
  return files;
}

export interface OwnershipHelperRequest {
  taskId: string;
  repoPath: string;
  image: string;
  hostDir: string;
  entries: readonly OwnershipEntry[];
}

export async function applyOwnershipInContainer(
  docker: Docker,
  owner: SandboxOwner,
  request: OwnershipHelperRequest,
): Promise<void> {
  const manifestDir = await mkdtemp(path.join(tmpdir(), 'agent-runner-ownership-'));
  try {
    for (const [name, content] of ownershipManifest(request.entries))
      await writeFile(path.join(manifestDir, name), content);
    const result = await runOneShotContainer(docker, owner, {
      image: request.image,
      taskId: request.taskId,
      repoPath: request.repoPath,
      role: 'ownership',
      entrypoint: ['bash', '-c'],
      cmd: [SCRIPT],
      mounts: [
        { source: request.hostDir, target: '/w' },
        { source: manifestDir, target: '/m', readOnly: true },
      ],
      capAdd: ['CHOWN', 'FOWNER', 'DAC_OVERRIDE'],
      networkMode: 'none',
      pidsLimit: 32,
      memoryBytes: 256 * 1024 * 1024,
    });
    if (result.statusCode !== 0) {
      throw new EnvironmentError(
        'sandbox_failed',
        `Could not set the ownership of ${request.hostDir} (helper container exit ${result.statusCode}): ${result.logsTail}. ` +
          'Run agent-runner as root, or check that the worker image has bash, chown and chmod.',
      );
    }
  } finally {
    await rm(manifestDir, { recursive: true, force: true });
  }
}
