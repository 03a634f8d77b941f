/**
 * Applies an ownership plan to a host directory from a short-lived helper container, for a runner that is not
 * root and so cannot chown on the host. The helper runs a fixed script over a manifest (no model or worker
 * text is ever executed), as root with only CAP_CHOWN, CAP_FOWNER and CAP_DAC_OVERRIDE, no network, a
 * read-only root filesystem, and only two mounts: the directory to fix and the manifest (read-only). Symlinks
 * are chowned with -h and never chmod-ed, so a link planted in the directory cannot redirect it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import type { OwnershipEntry } from '../core/ports.js';
import { EnvironmentError } from '../errors.js';
import { SANDBOX_LABELS, type SandboxOwner } from './container-options.js';

const SCRIPT = [
  'set -eu',
  'cd /w',
  "while IFS= read -r -d '' owner && IFS= read -r -d '' mode && IFS= read -r -d '' target; do",
  '  [ -e "$target" ] || [ -L "$target" ] || continue',
  '  chown -h -- "$owner" "$target"',
  '  if [ "$mode" != - ]; then chmod -- "$mode" "$target"; fi',
  'done < /m/manifest',
].join('\n');

/** NUL-separated `uid:gid`, octal mode (or `-`), path: safe for any file name. */
export function ownershipManifest(entries: readonly OwnershipEntry[]): Buffer {
  return Buffer.from(
    entries
      .map(
        (entry) =>
          `${entry.uid}:${entry.gid}\0${entry.mode === null ? '-' : entry.mode.toString(8)}\0${entry.path}\0`,
      )
      .join(''),
    'utf8',
  );
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
  let containerId: string | null = null;
  try {
    await writeFile(path.join(manifestDir, 'manifest'), ownershipManifest(request.entries));
    const container = await docker.createContainer({
      Image: request.image,
      Entrypoint: ['bash', '-c'],
      Cmd: [SCRIPT],
      User: '0:0',
      WorkingDir: '/',
      Labels: {
        [SANDBOX_LABELS.task]: request.taskId,
        [SANDBOX_LABELS.repo]: request.repoPath,
        [SANDBOX_LABELS.version]: owner.version,
        [SANDBOX_LABELS.pid]: String(owner.pid),
        [SANDBOX_LABELS.hostname]: owner.hostname,
        'agent-runner.role': 'ownership',
      },
      HostConfig: {
        Mounts: [
          { Type: 'bind', Source: request.hostDir, Target: '/w' },
          { Type: 'bind', Source: manifestDir, Target: '/m', ReadOnly: true },
        ],
        CapDrop: ['ALL'],
        CapAdd: ['CHOWN', 'FOWNER', 'DAC_OVERRIDE'],
        SecurityOpt: ['no-new-privileges'],
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        PidsLimit: 32,
        Memory: 256 * 1024 * 1024,
      },
    });
    containerId = container.id;
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    if (StatusCode !== 0) {
      const logs = (await container.logs({ stdout: true, stderr: true })).toString('utf8').slice(-2000);
      throw new EnvironmentError(
        'sandbox_failed',
        `Could not set the ownership of ${request.hostDir} (helper container exit ${StatusCode}): ${logs.trim()}. ` +
          'Run agent-runner as root, or check that the worker image has bash, chown and chmod.',
      );
    }
  } finally {
    if (containerId)
      await docker
        .getContainer(containerId)
        .remove({ force: true })
        .catch(() => undefined);
    await rm(manifestDir, { recursive: true, force: true });
  }
}
