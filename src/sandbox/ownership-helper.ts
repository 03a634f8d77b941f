/**
 * Applies an ownership plan to a host directory from a short-lived helper container, for a runner that is not
 * root and so cannot chown on the host. The helper runs a fixed script (the descriptor pass of
 * src/workspace/scope/ownership-pass.ts, with the image's own node) over a manifest: no model or worker text is
 * ever executed. It runs as root with only CAP_CHOWN, CAP_FOWNER and CAP_DAC_OVERRIDE, no network, a
 * read-only root filesystem, and only two mounts: the directory to fix and the manifest (read-only). Like on
 * the host, no link is followed and a step whose entry changed since the listing is skipped and reported.
 *
 * It runs under the engine's default runtime (runc), never the task's: its whole job is the host's ownership of
 * the directory, and under runsc the pass's own checks saw other metadata than it had just set through gVisor's
 * gofer (every step reported as changed), so a runner that is not root could start no task. It never runs
 * beside the worker (before the sandbox starts, or after every container of the task has stopped), and runs only
 * the fixed script above, as it did under runc before gVisor was the default.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import type { OwnershipPassReport, OwnershipRequest } from '../core/ports.js';
import { EnvironmentError } from '../errors.js';
import { ownershipPassScript } from '../workspace/scope/ownership-pass.js';
import type { SandboxOwner } from './container-options.js';
import { runOneShotContainer } from './one-shot-container.js';

/** Where the helper sees the directory to fix and the manifest. */
const TARGET_DIR = '/w';
const MANIFEST = '/m/plan.json';

/**
 * The report the script printed last; null when there is none (the script did not finish). Docker's log
 * stream puts a binary frame header before each write, so the report is found by its first key.
 */
export function parsePassReport(logs: string): OwnershipPassReport | null {
  const start = logs.lastIndexOf('{"applied":');
  const last = start === -1 ? '' : (logs.slice(start).split('\n')[0] ?? '');
  try {
    const report = JSON.parse(last) as OwnershipPassReport;
    return typeof report.applied === 'number' && typeof report.skippedCount === 'number' ? report : null;
  } catch {
    return null;
  }
}

export async function applyOwnershipInContainer(
  docker: Docker,
  owner: SandboxOwner,
  request: OwnershipRequest,
): Promise<OwnershipPassReport> {
  const manifestDir = await mkdtemp(path.join(tmpdir(), 'agent-runner-ownership-'));
  try {
    await writeFile(
      path.join(manifestDir, path.basename(MANIFEST)),
      JSON.stringify({ entries: request.entries }),
    );
    const result = await runOneShotContainer(docker, owner, {
      image: request.image,
      taskId: request.taskId,
      repoPath: request.repoPath,
      role: 'ownership',
      entrypoint: ['node', '-e', ownershipPassScript(TARGET_DIR)],
      cmd: [MANIFEST],
      mounts: [
        { source: request.hostDir, target: TARGET_DIR },
        { source: manifestDir, target: path.dirname(MANIFEST), readOnly: true },
      ],
      capAdd: ['CHOWN', 'FOWNER', 'DAC_OVERRIDE'],
      networkMode: 'none',
      pidsLimit: 32,
      memoryBytes: 512 * 1024 * 1024,
      logsOnSuccess: true,
    });
    const report = result.statusCode === 0 ? parsePassReport(result.logsTail) : null;
    if (report === null) {
      throw new EnvironmentError(
        'sandbox_failed',
        `Could not set the ownership of ${request.hostDir} (helper container exit ${result.statusCode}): ${result.logsTail}. ` +
          'Run agent-runner as root, or check that the worker image has node (the sandbox relay needs it too).',
      );
    }
    return report;
  } finally {
    await rm(manifestDir, { recursive: true, force: true });
  }
}
