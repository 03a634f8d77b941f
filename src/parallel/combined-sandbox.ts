/**
 * The combined check of a project on a commit of the integration branch: the DoD, then every merged subtask's
 * acceptance criteria checks on the same tree (a `test` criterion's framework detected on the combined tree,
 * `file_exists` looked up in its commit). Under `parallel.checkSandbox: fresh`, in a sandbox made for it
 * (`<ID>--check-<N>`: its own workspace, the project's gateway) and removed after; otherwise in the project's
 * integration sandbox (integration-sandbox.ts), with the same checks.
 */
import { rm } from 'node:fs/promises';
import type { Config } from '../config/schema.js';
import type { SandboxRuntime } from '../core/ports.js';
import type { SandboxRuntimeChoice } from '../core/records.js';
import type { TaskFacts } from '../core/types.js';
import type { GitTaskWorkspace } from '../workspace/git-task-workspace.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import { taskSandboxPorts } from '../lifecycle/task-sandbox-ports.js';
import { git, tryGit } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import { startSandboxSession } from '../core/sandbox-session.js';
import type { SubtaskCriteria } from './ports.js';
import type { CombinedCheck, SubtaskCriterionCheck } from './project-events.js';

export interface CombinedCheckInput {
  config: Config;
  repoRoot: string;
  runtime: SandboxRuntime;
  gateway: TaskGateway;
  image: string;
  /** The set-up commands a task of this repository runs (the toolchain's, then `sandbox.setup`). */
  setup: readonly string[];
  /** `<ID>--check-<N>`: a throwaway workspace on the integration head, removed afterwards. */
  taskId: string;
  headSha: string;
  /** What the check is for (`alpha`, `alpha + fix-up`...), as recorded. */
  label: string;
  criteria: readonly SubtaskCriteria[];
  /** `--skip-dod` or `dod.skip`: the criteria checks run, the DoD is recorded as skipped. */
  dodSkipped: boolean;
  signal?: AbortSignal;
  /** The OCI runtime of its containers (a task's choice, startDockerSide). */
  containerRuntime?: SandboxRuntimeChoice;
}

/** The combined check on `headSha`, in a sandbox made for it and removed after (nothing of it is the person's). */
export async function combinedCheck(input: CombinedCheckInput): Promise<CombinedCheck> {
  const { config, repoRoot, taskId } = input;
  const layout = taskLayout(repoRoot, taskId);
  const { workspace, sandboxes } = taskSandboxPorts({
    runtime: input.runtime,
    config,
    image: input.image,
    repoRoot,
    taskId,
    base: input.headSha,
    dodSkipped: input.dodSkipped,
    gateway: input.gateway,
    setup: { ...(input.signal ? { signal: input.signal } : {}), commands: input.setup },
    keep: false,
    ...(input.containerRuntime ? { containerRuntime: input.containerRuntime } : {}),
  });
  try {
    const session = await startSandboxSession(workspace, sandboxes);
    try {
      const facts = await workspace.observe(session.sandboxId);
      const check = await runCombinedChecks(workspace, session.sandboxId, facts, {
        config,
        label: input.label,
        criteria: input.criteria,
        ...(input.signal ? { signal: input.signal } : {}),
      });
      return { ...check, sandbox: { reused: false, reason: 'parallel.checkSandbox: fresh' } };
    } finally {
      await session.stop().catch(() => undefined);
    }
  } finally {
    // Nothing of this check is the person's: the sandbox, the worktree and the branch all go.
    await workspace.removeSandbox().catch(() => undefined);
    await tryGit(['worktree', 'remove', '--force', layout.worktreePath], { cwd: repoRoot });
    await tryGit(['branch', '-D', layout.branch], { cwd: repoRoot });
    await git(['worktree', 'prune'], { cwd: repoRoot }).catch(() => undefined);
    // Its run folder too (the workspace's bookkeeping): the result is in the project's journal and note, and a
    // folder left behind would show in `status` as a task of its own.
    await rm(layout.runDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** The DoD, then every group's criteria checks, on the tree the sandbox holds (whose facts are `facts`). */
export async function runCombinedChecks(
  workspace: Pick<GitTaskWorkspace, 'runDod' | 'runCriteriaChecks'>,
  sandboxId: string,
  facts: TaskFacts,
  input: Pick<CombinedCheckInput, 'config' | 'label' | 'criteria' | 'signal'>,
): Promise<CombinedCheck> {
  const bounds = {
    ...(input.signal ? { signal: input.signal } : {}),
    timeoutMs: input.config.limits.wallClock,
  };
  const dod = await workspace.runDod(sandboxId, facts, bounds);
  const criteria: SubtaskCriterionCheck[] = [];
  for (const group of input.criteria) {
    const results = await workspace.runCriteriaChecks(sandboxId, group.criteria, facts, bounds, dod);
    criteria.push(...results.map((result) => ({ ...result, subtask: group.subtask })));
  }
  return { subtask: input.label, headSha: facts.headSha, dod, criteria };
}
