/**
 * Containers agent-runner left behind: labelled `agent-runner.task`, created by a runner (`agent-runner.pid`
 * on `agent-runner.hostname`) that is no longer alive on this host. A runner killed with -9, a crash, or a
 * Docker engine that went away mid-run leave them; `run`/`resume` sweep a repository's orphans on start and
 * `agent-runner gc` sweeps them on demand. Containers of a live runner, or of another host, are never touched.
 */
import { hostname as osHostname } from 'node:os';
import path from 'node:path';
import type { SandboxRuntime, SandboxSummary } from '../core/ports.js';
import { SANDBOX_LABELS } from '../sandbox/container-options.js';
import { livenessOf, type Liveness } from './process-liveness.js';

/** Set on the container of a task run with `--keep-sandbox`: the orphan sweep leaves it for the person. */
export const KEPT_SANDBOX_LABEL = 'agent-runner.keep';

/** The labels of a sandbox the person asked to keep (none otherwise). */
export function keptSandboxLabels(keep: boolean): Record<string, string> {
  return keep ? { [KEPT_SANDBOX_LABEL]: 'true' } : {};
}

/** A container of agent-runner with its owner's liveness. */
export interface LabelledSandbox {
  id: string;
  name: string;
  state: string;
  taskId: string;
  repo: string;
  pid: number | null;
  hostname: string | null;
  /** `dead`: an orphan. `unknown`: another host, or no owner labels (not ours to judge). */
  owner: Liveness;
  /** Kept on purpose (`--keep-sandbox`): never swept as an orphan; `gc --force` or `docker rm` removes it. */
  kept: boolean;
}

export interface FindSandboxesOptions {
  /** Only containers of this repository (label `agent-runner.repo`); all repositories when absent. */
  repoRoot?: string;
  hostname?: string;
}

function describe(summary: SandboxSummary, localHostname: string): LabelledSandbox | null {
  const labels = summary.labels ?? {};
  const taskId = labels[SANDBOX_LABELS.task];
  if (taskId === undefined) return null;
  const pid = Number(labels[SANDBOX_LABELS.pid]);
  const hostname = labels[SANDBOX_LABELS.hostname] ?? null;
  const hasOwner = Number.isInteger(pid) && pid > 0 && hostname !== null;
  return {
    id: summary.id,
    name: summary.name,
    state: summary.state,
    taskId,
    repo: labels[SANDBOX_LABELS.repo] ?? '',
    pid: hasOwner ? pid : null,
    hostname,
    owner: hasOwner ? livenessOf({ pid, hostname }, localHostname) : 'unknown',
    kept: labels[KEPT_SANDBOX_LABEL] === 'true',
  };
}

/** Every container labelled by agent-runner (of `repoRoot` when given), with its owner's liveness. */
export async function listLabelledSandboxes(
  runtime: SandboxRuntime,
  options: FindSandboxesOptions = {},
): Promise<LabelledSandbox[]> {
  const localHostname = options.hostname ?? osHostname();
  // Filtering on the label key alone is not in the port (it takes key=value pairs), so list and filter here.
  const summaries = await runtime.list({});
  const wanted = options.repoRoot === undefined ? null : path.resolve(options.repoRoot);
  return summaries
    .map((summary) => describe(summary, localHostname))
    .filter((sandbox): sandbox is LabelledSandbox => sandbox !== null)
    .filter((sandbox) => wanted === null || path.resolve(sandbox.repo || '/') === wanted);
}

/** Containers whose runner is gone (dead pid on this host), kept ones aside. */
export async function findOrphanSandboxes(
  runtime: SandboxRuntime,
  options: FindSandboxesOptions = {},
): Promise<LabelledSandbox[]> {
  return (await findDeadOwnerSandboxes(runtime, options)).orphans;
}

/** Containers whose runner is gone: the orphans to sweep, and the ones kept on purpose (left alone). */
export async function findDeadOwnerSandboxes(
  runtime: SandboxRuntime,
  options: FindSandboxesOptions = {},
): Promise<{ orphans: LabelledSandbox[]; kept: LabelledSandbox[] }> {
  const dead = (await listLabelledSandboxes(runtime, options)).filter((sandbox) => sandbox.owner === 'dead');
  return { orphans: dead.filter((sandbox) => !sandbox.kept), kept: dead.filter((sandbox) => sandbox.kept) };
}

export interface SweepResult {
  removed: LabelledSandbox[];
  failed: { sandbox: LabelledSandbox; message: string }[];
}

/** Removes `orphans`; a failure to remove one is reported, not thrown, so the others still go. */
export async function removeSandboxes(
  runtime: SandboxRuntime,
  orphans: readonly LabelledSandbox[],
): Promise<SweepResult> {
  const result: SweepResult = { removed: [], failed: [] };
  for (const sandbox of orphans) {
    try {
      await runtime.remove(sandbox.id);
      result.removed.push(sandbox);
    } catch (error) {
      result.failed.push({ sandbox, message: (error as Error).message });
    }
  }
  return result;
}
