/**
 * The combined Definition of Done of a project: the DoD on a commit of the integration branch, in a
 * sandbox made for it (`<ID>--check-<N>`: its own workspace, the project's gateway) and removed after.
 */
import { rm } from 'node:fs/promises';
import type { Config } from '../config/schema.js';
import type { SandboxRuntime } from '../core/ports.js';
import type { DodOutcome } from '../core/types.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import { taskSandboxPorts } from '../lifecycle/task-sandbox-ports.js';
import { git, tryGit } from '../workspace/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import { startSandboxSession } from '../core/sandbox-session.js';

export interface CombinedDodInput {
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
  signal?: AbortSignal;
}

/** The DoD on `headSha`, in a sandbox made for it and removed after (nothing of it is the person's). */
export async function combinedDod(input: CombinedDodInput): Promise<DodOutcome> {
  const { config, repoRoot, taskId } = input;
  const layout = taskLayout(repoRoot, taskId);
  const { workspace, sandboxes } = taskSandboxPorts({
    runtime: input.runtime,
    config,
    image: input.image,
    repoRoot,
    taskId,
    base: input.headSha,
    dodSkipped: false,
    gateway: input.gateway,
    setup: { ...(input.signal ? { signal: input.signal } : {}), commands: input.setup },
    keep: false,
  });
  try {
    const session = await startSandboxSession(workspace, sandboxes);
    try {
      const facts = await workspace.observe(session.sandboxId);
      return await workspace.runDod(session.sandboxId, facts, {
        ...(input.signal ? { signal: input.signal } : {}),
        timeoutMs: config.limits.wallClock,
      });
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
