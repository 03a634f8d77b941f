/**
 * The sandbox every benchmark starts: the real hardened spec agent-runner uses (non-root user, read-only root,
 * tmpfs, no capabilities, limits, labels, one bind mount), labelled with this bench run's id so everything it
 * created can be found and removed at the end.
 */
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import type { SandboxSpec } from '../src/core/ports.js';
import { containerCreateOptions, dockerSocketPaths } from '../src/sandbox/container-options.js';
import { VERSION } from '../src/version.js';

/** Label every bench container carries, with the bench run's id. */
export const BENCH_LABEL = 'agent-runner.bench';
/** The sandbox user: not root, like a real task's. */
export const BENCH_UID = 10001;

export interface BenchSandboxes {
  runId: string;
  image: string;
  /** Host directory bind-mounted at /workspace (owned by the sandbox user). */
  workspace: string;
  /** A spec with a fresh task id (`bench-<run>-<label>-<n>`). */
  spec(label: string): SandboxSpec;
  /** The create options agent-runner would send for `spec`: what the raw `docker run` is built from. */
  createOptions(spec: SandboxSpec): Docker.ContainerCreateOptions;
  /** Removes every container of this bench run; returns how many were still there. */
  cleanup(docker: Docker): Promise<number>;
}

export async function benchSandboxes(runId: string, image: string): Promise<BenchSandboxes> {
  const workspace = await mkdtemp(path.join(tmpdir(), 'agent-runner-bench-'));
  await chown(workspace, BENCH_UID, BENCH_UID);
  let counter = 0;
  const owner = { version: VERSION, pid: process.pid, hostname: hostname() };
  return {
    runId,
    image,
    workspace,
    spec(label) {
      counter += 1;
      return {
        taskId: `bench-${runId}-${label}-${counter}`,
        repoPath: workspace,
        image,
        user: { uid: BENCH_UID, gid: BENCH_UID },
        mounts: [{ hostPath: workspace, containerPath: '/workspace' }],
        workdir: '/workspace',
        env: {},
        limits: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 256 },
        // No network: the same on both sides, and no bridge/veth set-up noise in the comparison.
        network: { mode: 'none' },
        labels: { [BENCH_LABEL]: runId },
      };
    },
    createOptions(spec) {
      return containerCreateOptions(spec, owner, dockerSocketPaths(process.env));
    },
    async cleanup(docker) {
      const leftovers = await docker.listContainers({
        all: true,
        filters: { label: [`${BENCH_LABEL}=${runId}`] },
      });
      for (const container of leftovers) {
        await docker
          .getContainer(container.Id)
          .remove({ force: true, v: true })
          .catch(() => undefined);
      }
      await rm(workspace, { recursive: true, force: true });
      return leftovers.length;
    },
  };
}
