/**
 * How a container ended, as the engine recorded it: `docker inspect`'s State (status, exit code, error, OOM)
 * and the OCI runtime it ran under. Read only after an operation on the sandbox failed, to say truthfully
 * whether it was stopped from outside, ran out of memory, or died by itself (a gVisor sandbox whose Sentry
 * ended exits with the Sentry's own status).
 */
import type Docker from 'dockerode';
import type { SandboxEnd } from '../core/ports.js';
import { statusOf } from './docker-exec.js';

/** The container's recorded end (its state when it is still running); null when the engine no longer knows it. */
export async function containerEnd(docker: Docker, containerId: string): Promise<SandboxEnd | null> {
  try {
    const info = await docker.getContainer(containerId).inspect();
    return {
      state: info.State.Status,
      exitCode: info.State.ExitCode,
      error: info.State.Error ?? '',
      oomKilled: info.State.OOMKilled,
      runtime: info.HostConfig.Runtime || 'runc',
    };
  } catch (error) {
    if (statusOf(error) === 404) return null;
    throw error;
  }
}
