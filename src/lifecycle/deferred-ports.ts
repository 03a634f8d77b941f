/**
 * The Docker side of a task (engine ping, orphan sweep, worker image, then the workspace, the sandbox and the
 * worker built on it) is made while the Meta-agent plans. These ports stand in for it from the start: each
 * call waits for the side to be ready, so a failed side fails the first call (the workspace's `prepare`),
 * which stops the planning the way any failed preparation does.
 */
import type { SandboxProviderPort, TaskWorkspacePort, WorkerAdapter } from '../core/ports.js';

/** The ports the loop needs from the Docker side. */
export interface DockerSidePorts {
  workspace: TaskWorkspacePort;
  sandboxes: SandboxProviderPort;
  worker: WorkerAdapter;
}

/** Ports that forward to the side once `ready` resolves; `workerType` is known before (it is config). */
export function deferredPorts(ready: Promise<DockerSidePorts>, workerType: string): DockerSidePorts {
  // diskCaps() and sandboxRuntime() answer at once: from the side once it is there (a sandbox is created only then).
  let side: DockerSidePorts | null = null;
  ready.then((value) => (side = value)).catch(() => undefined);
  return {
    workspace: {
      prepare: () => {
        const preparation = ready.then((side) => side.workspace.prepare());
        return {
          mountable: preparation.then((started) => started.mountable),
          prepared: preparation.then((started) => started.prepared),
        };
      },
      observe: async (...args) => (await ready).workspace.observe(...args),
      runDod: async (...args) => (await ready).workspace.runDod(...args),
      missingPrograms: async (...args) => (await ready).workspace.missingPrograms(...args),
      sealCheckCaches: async (...args) => (await ready).workspace.sealCheckCaches(...args),
      runCriteriaChecks: async (...args) => (await ready).workspace.runCriteriaChecks(...args),
      checkedOutHead: async (...args) => (await ready).workspace.checkedOutHead(...args),
      preserveUncommitted: async (...args) => (await ready).workspace.preserveUncommitted(...args),
    },
    sandboxes: {
      create: async () => (await ready).sandboxes.create(),
      setUp: async (...args) => (await ready).sandboxes.setUp(...args),
      stop: async (...args) => (await ready).sandboxes.stop(...args),
      checkDisk: async () => (await ready).sandboxes.checkDisk?.() ?? null,
      diskCaps: () => side?.sandboxes.diskCaps?.() ?? null,
      sandboxRuntime: () => side?.sandboxes.sandboxRuntime?.() ?? null,
    },
    worker: {
      type: workerType,
      run: async (...args) => (await ready).worker.run(...args),
    },
  };
}
