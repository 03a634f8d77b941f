/**
 * A sandbox session owns the order of a sandbox's life: the workspace is prepared while the container is
 * created over it (as soon as the workspace is mountable, while its files are still being checked out),
 * the set-up runs once the files are there, and the session stops it. The task's loop and a project's
 * combined DoD check both start their sandboxes here. Ports only: the order is the product, the adapters
 * do the work.
 */
import type { PreparedTask, SandboxProviderPort, TaskWorkspacePort } from './ports.js';

export interface SandboxSession {
  task: PreparedTask;
  sandboxId: string;
  /** Removes the sandbox (or keeps it, under --keep-sandbox). */
  stop(): Promise<void>;
}

export interface SandboxSessionOptions {
  /** The workspace is prepared (before the set-up): e.g. report the task as started. */
  onPrepared?: (task: PreparedTask) => void;
  /**
   * Asked before the container is created and again before the set-up: a reason to go no further (the
   * planning beside it failed). The session then stops what it started and throws that error.
   */
  abandoned?: () => { error: unknown } | null;
}

/**
 * Prepares the workspace and starts the sandbox on it. Both sides settle before anything is reported, so
 * nothing is left half-made; on any failure a container already created is removed (nothing ran in it).
 */
export async function startSandboxSession(
  workspace: Pick<TaskWorkspacePort, 'prepare'>,
  sandboxes: SandboxProviderPort,
  options: SandboxSessionOptions = {},
): Promise<SandboxSession> {
  const preparation = workspace.prepare();
  const creating = (async () => {
    await preparation.mountable;
    // Abandoned already: the sandbox is not needed.
    if (options.abandoned?.()) return null;
    return sandboxes.create();
  })();
  const [prepared, created] = await Promise.allSettled([preparation.prepared, creating]);
  const sandboxId = created.status === 'fulfilled' ? created.value : null;
  try {
    if (prepared.status === 'rejected') throw prepared.reason;
    options.onPrepared?.(prepared.value);
    if (created.status === 'rejected') throw created.reason;
    const abandoned = options.abandoned?.();
    // The workspace is there (a note can name it); the sandbox is not needed.
    if (abandoned) throw abandoned.error;
    if (!sandboxId) throw new Error('the sandbox was not created');
    await sandboxes.setUp(sandboxId);
    return { task: prepared.value, sandboxId, stop: () => sandboxes.stop(sandboxId) };
  } catch (error) {
    if (sandboxId) await sandboxes.stop(sandboxId).catch(() => undefined);
    throw error;
  }
}
