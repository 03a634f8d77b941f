/**
 * What a caller of a task needs to know while it runs and after it ended (the sandbox a second Ctrl-C
 * reaches, whether a worker runs, the last DoD, the worker's last message), taken from the task's own ports
 * as they answer, not read back from its events.
 */
import type { DodOutcome } from '../core/types.js';
import type { DockerSidePorts } from '../lifecycle/deferred-ports.js';

export class TaskTracker {
  sandboxId: string | null = null;
  workerRunning = false;
  lastDod: DodOutcome | undefined;
  workerSummary: string | undefined;

  /** The same ports, each answer noted on the way back. */
  track(ports: DockerSidePorts): DockerSidePorts {
    const { workspace, sandboxes, worker } = ports;
    return {
      workspace: {
        prepare: () => workspace.prepare(),
        observe: (...args) => workspace.observe(...args),
        runDod: async (...args) => {
          const outcome = await workspace.runDod(...args);
          this.lastDod = outcome;
          return outcome;
        },
        missingPrograms: (...args) => workspace.missingPrograms(...args),
        sealCheckCaches: (...args) => workspace.sealCheckCaches(...args),
        runCriteriaChecks: (...args) => workspace.runCriteriaChecks(...args),
        checkedOutHead: (...args) => workspace.checkedOutHead(...args),
        preserveUncommitted: (...args) => workspace.preserveUncommitted(...args),
      },
      sandboxes: {
        create: async () => {
          const id = await sandboxes.create();
          this.sandboxId = id;
          return id;
        },
        setUp: (...args) => sandboxes.setUp(...args),
        stop: async (...args) => {
          await sandboxes.stop(...args);
          if (this.sandboxId === args[0]) this.sandboxId = null;
        },
        checkDisk: async () => (await sandboxes.checkDisk?.()) ?? null,
        diskCaps: () => sandboxes.diskCaps?.() ?? null,
        sandboxRuntime: () => sandboxes.sandboxRuntime?.() ?? null,
      },
      worker: {
        type: worker.type,
        run: async (...args) => {
          this.workerRunning = true;
          try {
            const result = await worker.run(...args);
            this.workerSummary = result.finalMessage ?? undefined;
            return result;
          } finally {
            this.workerRunning = false;
          }
        },
      },
    };
  }
}
