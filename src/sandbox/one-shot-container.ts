/**
 * A short-lived helper container that runs one fixed command and is removed, whatever happens: the ownership
 * helper and the link-local guard are both this. Each caller gives its own capabilities, mounts and network;
 * what they share is the hardening every helper keeps (no other capability, `no-new-privileges`, a read-only
 * root, small limits), the owner labels that let `gc` and the orphan sweep find one left by a crash, and the
 * create → start → wait → remove sequence.
 */
import type Docker from 'dockerode';
import type { ContainerRuntime } from '../core/records.js';
import { SANDBOX_LABELS, type SandboxOwner } from './container-options.js';

export interface OneShotRequest {
  image: string;
  taskId: string;
  repoPath: string;
  /** `agent-runner.role` label: what the helper is for. */
  role: string;
  entrypoint: string[];
  cmd: string[];
  /** The only capabilities the helper gets (everything else is dropped). */
  capAdd: string[];
  networkMode: string;
  mounts?: { source: string; target: string; readOnly?: boolean }[];
  pidsLimit: number;
  memoryBytes: number;
  /** Read the log's tail when it succeeds too (a helper that reports on its output). */
  logsOnSuccess?: boolean;
  /** The OCI runtime (the task's; default: the engine's default). */
  runtime?: ContainerRuntime;
}

export interface OneShotResult {
  statusCode: number;
  /** The tail of its stdout and stderr, for the caller's error message. */
  logsTail: string;
}

/** Runs the helper as root (uid 0, with only `capAdd`) to its end, then removes it. */
export async function runOneShotContainer(
  docker: Docker,
  owner: SandboxOwner,
  request: OneShotRequest,
): Promise<OneShotResult> {
  let containerId: string | null = null;
  try {
    const container = await docker.createContainer({
      Image: request.image,
      Entrypoint: request.entrypoint,
      Cmd: request.cmd,
      User: '0:0',
      WorkingDir: '/',
      Labels: {
        [SANDBOX_LABELS.task]: request.taskId,
        [SANDBOX_LABELS.repo]: request.repoPath,
        [SANDBOX_LABELS.version]: owner.version,
        [SANDBOX_LABELS.pid]: String(owner.pid),
        [SANDBOX_LABELS.hostname]: owner.hostname,
        'agent-runner.role': request.role,
      },
      HostConfig: {
        ...(request.mounts
          ? {
              Mounts: request.mounts.map((mount) => ({
                Type: 'bind' as const,
                Source: mount.source,
                Target: mount.target,
                ReadOnly: mount.readOnly ?? false,
              })),
            }
          : {}),
        CapDrop: ['ALL'],
        CapAdd: request.capAdd,
        SecurityOpt: ['no-new-privileges'],
        NetworkMode: request.networkMode,
        ReadonlyRootfs: true,
        PidsLimit: request.pidsLimit,
        Memory: request.memoryBytes,
        ...(request.runtime ? { Runtime: request.runtime } : {}),
      },
    });
    containerId = container.id;
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    const logsTail =
      StatusCode === 0 && !request.logsOnSuccess
        ? ''
        : (await container.logs({ stdout: true, stderr: true })).toString('utf8').slice(-2000).trim();
    return { statusCode: StatusCode, logsTail };
  } finally {
    if (containerId)
      await docker
        .getContainer(containerId)
        .remove({ force: true })
        .catch(() => undefined);
  }
}
