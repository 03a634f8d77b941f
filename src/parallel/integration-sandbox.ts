/**
 * The project's integration sandbox: one long-lived sandbox (`<ID>--integration`) in which every combined check
 * runs, made when the project starts (its set-up beside the subtasks' first model calls, off the critical path)
 * and brought to each head in place, with the hygiene a task's sandbox has between runs and more: the worker's
 * processes swept, no startup file read, the tree and `.git` replaced by the head's sandbox repository (made
 * by the host, mounted read-only), the set-up's outputs kept only when they are what the set-up left, byte for
 * byte (src/sandbox/setup-outputs.ts), the uid's temporary files removed.
 *
 * A fresh sandbox on the head is made instead when the head changed what the set-up reads (a dependency
 * manifest or lockfile, a file the set-up commands name), when anything of the set-up's outputs changed, or
 * when the sandbox cannot be updated; the combined check records which and why. `parallel.checkSandbox:
 * fresh` makes one per check (combined-sandbox.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import type { Config } from '../config/schema.js';
import type { SandboxRuntime } from '../core/ports.js';
import type { TaskFacts } from '../core/types.js';
import { startSandboxSession, type SandboxSession } from '../core/sandbox-session.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import { ownershipApplier, taskSandboxPorts } from '../lifecycle/task-sandbox-ports.js';
import { endStrayProcesses } from '../sandbox/stray-processes.js';
import { SANDBOX_LABELS, userField } from '../sandbox/container-options.js';
import {
  CHECK_INBOX_DIR,
  replaceCheckTree,
  sealSetupOutputs,
  type ReuseRefusal,
} from '../sandbox/setup-outputs.js';
import { git, tryGit } from '../workspace/git/git-command.js';
import { inspectRepository } from '../workspace/git/inspect-repository.js';
import { taskLayout } from '../workspace/layout.js';
import { removeTaskSandbox } from '../workspace/sandbox-repo/remove-task-sandbox.js';
import { keeperIdsFor } from '../workspace/scope/permissions.js';
import { SANDBOX_GIT_TIMEOUT_MS, sandboxGit, sandboxStatus } from '../workspace/sandbox-repo/sandbox-git.js';
import {
  fillSandboxRepository,
  initSandboxRepository,
} from '../workspace/sandbox-repo/sandbox-repository.js';
import { compileScope, defaultScope, mergeScope } from '../workspace/scope/scope.js';
import { createSnapshot } from '../workspace/sandbox-repo/snapshot.js';
import type { GitTaskWorkspace } from '../workspace/git-task-workspace.js';
import { runCombinedChecks } from './combined-sandbox.js';
import type { SandboxRuntimeChoice } from '../core/records.js';
import type { SubtaskCriteria } from './ports.js';
import type { CombinedCheck } from './project-events.js';
import { setupInputsChanged } from './setup-inputs.js';

export interface IntegrationSandboxOptions {
  config: Config;
  repoRoot: string;
  /** The project's id: the sandbox is `<ID>--integration`. */
  projectId: string;
  runtime: SandboxRuntime;
  gateway: TaskGateway;
  image: string;
  /** The set-up commands a task of this repository runs (the toolchain's, then `sandbox.setup`). */
  setup: readonly string[];
  dodSkipped: boolean;
  /** The OCI runtime of its containers (a task's choice, startDockerSide). */
  containerRuntime?: SandboxRuntimeChoice;
}

/** A sandbox on a head, set up, with what the set-up left sealed (or why it cannot be reused). */
interface Live {
  workspace: GitTaskWorkspace;
  session: SandboxSession;
  /** The head the set-up ran on (set-up inputs are compared with it). */
  setupSha: string;
  /** The head the tree is at now. */
  headSha: string;
  roots: string[];
  /** Why this sandbox serves no other head (its set-up's outputs could not be sealed), or null. */
  notReusable: ReuseRefusal;
  /** A check ran in it since its tree was last made: the next check brings it back, even to the same head. */
  used: boolean;
}

export class IntegrationSandbox {
  private live: Promise<Live> | null = null;
  /** The head the project started from: the only tree whose checks may fill the checks' caches. */
  private baseSha: string | null = null;
  private updates = 0;
  /** One check at a time: each brings the one sandbox to its head. */
  private turn: Promise<unknown> = Promise.resolve();
  private readonly taskId: string;

  constructor(private readonly options: IntegrationSandboxOptions) {
    this.taskId = `${options.projectId}--integration`;
  }

  /** Starts making the sandbox on `headSha` (the project's base): the first check then finds it ready. */
  start(headSha: string, signal?: AbortSignal): void {
    this.baseSha = headSha;
    this.live = this.make(headSha, signal);
    // A failure is met (and a fresh one made) by the first check.
    this.live.catch(() => undefined);
  }

  /** The combined check on `headSha` in this sandbox, brought to that head (or made anew on it). */
  check(
    headSha: string,
    label: string,
    criteria: readonly SubtaskCriteria[],
    signal?: AbortSignal,
  ): Promise<CombinedCheck> {
    const checked = this.turn.then(() => this.checkNow(headSha, label, criteria, signal));
    this.turn = checked.catch(() => undefined);
    return checked;
  }

  private async checkNow(
    headSha: string,
    label: string,
    criteria: readonly SubtaskCriteria[],
    signal?: AbortSignal,
  ): Promise<CombinedCheck> {
    const { live, sandbox } = await this.at(headSha, signal);
    live.used = true;
    const { runtime } = this.options;
    const status = await sandboxStatus(runtime, live.session.sandboxId, signal);
    const facts: TaskFacts = {
      baseSha: headSha,
      headSha,
      commits: [],
      dirty: status.error !== null || status.changes.length > 0,
      uncommitted: status.changes.map((change) => `${change.status.trim()} ${change.path}`),
      changedFiles: [],
      diffStat: '',
      diff: '',
      scopeViolations: [],
    };
    const result = await runCombinedChecks(live.workspace, live.session.sandboxId, facts, {
      config: this.options.config,
      label,
      criteria,
      ...(signal ? { signal } : {}),
    });
    return { ...result, sandbox };
  }

  /** Removes the sandbox and everything of it (container, sandbox repository, branch, worktree, run folder). */
  async dispose(): Promise<void> {
    await this.turn;
    const live = await this.live?.catch(() => null);
    this.live = null;
    if (live) await live.session.stop().catch(() => undefined);
    await this.removeLeftovers();
  }

  /** The sandbox at `headSha`: the live one updated in place, or a fresh one (and why). */
  private async at(
    headSha: string,
    signal?: AbortSignal,
  ): Promise<{ live: Live; sandbox: NonNullable<CombinedCheck['sandbox']> }> {
    const previous = await (this.live ?? Promise.reject(new Error('not started'))).catch(
      (error: unknown) => ({ failed: (error as Error).message }),
    );
    if ('failed' in previous)
      return this.fresh(headSha, `the integration sandbox was not ready: ${previous.failed}`, signal);
    if (previous.headSha === headSha && !previous.used) return { live: previous, sandbox: { reused: true } };
    const refusal =
      previous.notReusable ??
      (await setupInputsChanged(this.options.repoRoot, previous.setupSha, headSha, this.options.setup)) ??
      (await this.update(previous, headSha, signal));
    if (refusal) {
      await previous.session.stop().catch(() => undefined);
      return this.fresh(headSha, refusal, signal);
    }
    previous.headSha = headSha;
    return { live: previous, sandbox: { reused: true } };
  }

  private async fresh(
    headSha: string,
    reason: string,
    signal?: AbortSignal,
  ): Promise<{ live: Live; sandbox: NonNullable<CombinedCheck['sandbox']> }> {
    this.live = this.make(headSha, signal);
    return { live: await this.live, sandbox: { reused: false, reason } };
  }

  /** Brings the live sandbox's tree to `headSha` (see the module comment); the reason it could not, or null. */
  private async update(live: Live, headSha: string, signal?: AbortSignal): Promise<ReuseRefusal> {
    const { runtime } = this.options;
    const sandboxId = live.session.sandboxId;
    const sweep = await endStrayProcesses(runtime, sandboxId);
    if (sweep !== 'clean') return 'a process of an earlier check could not be ended';
    this.updates += 1;
    const name = `check-${this.updates}`;
    const inbox = path.join(this.inboxDir(), name);
    try {
      await this.sandboxRepository(headSha, path.join(inbox, 'repo'));
      return await replaceCheckTree({
        runtime,
        sandboxId,
        keeper: userField(keeperIdsFor(live.workspace.mount.workerUser)),
        source: `${CHECK_INBOX_DIR}/${name}/repo`,
        holdName: `.agent-runner-hold-${randomBytes(6).toString('hex')}`,
        roots: live.roots,
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      return `the head's repository could not be made: ${(error as Error).message}`;
    } finally {
      // The host made it and no container can write it (mounted read-only): removed like any of its files.
      await rm(inbox, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** The head's sandbox repository, made the way a task's is (a snapshot under the scope's exclusions). */
  private async sandboxRepository(headSha: string, target: string): Promise<void> {
    const { repoRoot, config } = this.options;
    const layout = taskLayout(repoRoot, this.taskId);
    const scope = compileScope(mergeScope(defaultScope(), config.scope));
    const [repository, snapshot] = await Promise.all([
      inspectRepository(repoRoot),
      createSnapshot(repoRoot, headSha, scope, layout.snapshotRef),
    ]);
    await initSandboxRepository({
      objectsDir: path.join(repository.gitCommonDir, 'objects'),
      sandboxRepoPath: target,
      branch: layout.branch,
    });
    await fillSandboxRepository({
      repoRoot,
      sandboxRepoPath: target,
      snapshotSha: snapshot.sha,
      branch: layout.branch,
    });
    // Read by the worker's uid in the sandbox (the runner may be another user with a tight umask).
    await execa('chmod', ['-R', 'a+rX', path.dirname(target)]);
  }

  /** A new sandbox on `headSha`: workspace, container, set-up, then the set-up's outputs sealed. */
  private async make(headSha: string, signal?: AbortSignal): Promise<Live> {
    const { config, repoRoot, runtime, gateway, image } = this.options;
    await this.removeLeftovers();
    await mkdir(this.inboxDir(), { recursive: true });
    const ports = taskSandboxPorts({
      runtime,
      config,
      image,
      repoRoot,
      taskId: this.taskId,
      base: headSha,
      dodSkipped: this.options.dodSkipped,
      gateway,
      setup: { ...(signal ? { signal } : {}), commands: this.options.setup },
      keep: false,
      extraMounts: [{ hostPath: this.inboxDir(), containerPath: CHECK_INBOX_DIR, readOnly: true }],
      noReadOnly: true,
      ...(this.options.containerRuntime ? { containerRuntime: this.options.containerRuntime } : {}),
    });
    const session = await startSandboxSession(ports.workspace, ports.sandboxes);
    try {
      const roots = await setupRoots(runtime, session.sandboxId, signal);
      const sealed =
        'refused' in roots
          ? roots
          : await sealSetupOutputs(
              {
                runtime,
                sandboxId: session.sandboxId,
                keeper: userField(keeperIdsFor(ports.workspace.mount.workerUser)),
                ...(signal ? { signal } : {}),
              },
              roots.paths,
            );
      if (headSha === this.baseSha) await this.warmCaches(ports.workspace, session.sandboxId, signal);
      return {
        workspace: ports.workspace,
        session,
        setupSha: headSha,
        headSha,
        roots: 'paths' in roots ? roots.paths : [],
        notReusable: 'refused' in sealed ? sealed.refused : null,
        used: false,
      };
    } catch (error) {
      await session.stop().catch(() => undefined);
      throw error;
    }
  }

  /**
   * On the project's base only (the person's code, before any subtask's), the DoD fills the checks' caches and
   * they are sealed, as a task's baseline does (src/workspace/checks/check-caches.ts): every later check starts from a
   * copy (Go's build cache, pip's). Its result is not evidence of anything and is not kept.
   */
  private async warmCaches(
    workspace: GitTaskWorkspace,
    sandboxId: string,
    signal?: AbortSignal,
  ): Promise<void> {
    if (this.options.dodSkipped) return;
    const clean = { dirty: false };
    const bounds = { timeoutMs: this.options.config.limits.wallClock, ...(signal ? { signal } : {}) };
    await workspace.runDod(sandboxId, clean, bounds, { warmCaches: true }).catch(() => undefined);
    await workspace.sealCheckCaches(sandboxId, signal);
  }

  private inboxDir(): string {
    return path.join(taskLayout(this.options.repoRoot, this.taskId).sandboxDir, 'inbox');
  }

  /** Everything of an earlier integration sandbox of this project (this one's, or one a crash left). */
  private async removeLeftovers(): Promise<void> {
    const { repoRoot, runtime, image } = this.options;
    const layout = taskLayout(repoRoot, this.taskId);
    // No container of it outlives its life, whatever stopped it (a removal that failed, a run cut short).
    const containers = await runtime
      .list({ [SANDBOX_LABELS.task]: this.taskId, [SANDBOX_LABELS.repo]: repoRoot })
      .catch(() => []);
    for (const container of containers) await runtime.remove(container.id).catch(() => undefined);
    // Its files are the worker's uid: a runner that is not root gives them back through the helper first.
    await removeTaskSandbox(
      repoRoot,
      this.taskId,
      ownershipApplier(runtime, { repoRoot, taskId: this.taskId, image }),
    ).catch(() => undefined);
    await tryGit(['worktree', 'remove', '--force', layout.worktreePath], { cwd: repoRoot });
    await tryGit(['branch', '-D', layout.branch], { cwd: repoRoot });
    await tryGit(['update-ref', '-d', layout.snapshotRef], { cwd: repoRoot });
    await git(['worktree', 'prune'], { cwd: repoRoot }).catch(() => undefined);
    await rm(layout.runDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * What the set-up left that git does not track (ignored or untracked, directories whole), as paths relative to
 * /workspace: asked of git in the sandbox as the worker's uid, before any check ran there.
 */
async function setupRoots(
  runtime: SandboxRuntime,
  sandboxId: string,
  signal?: AbortSignal,
): Promise<{ paths: string[] } | { refused: string }> {
  const result = await sandboxGit(
    runtime,
    sandboxId,
    ['status', '--porcelain=v1', '-z', '--ignored=traditional', '--untracked-files=normal', '--no-renames'],
    { timeoutMs: SANDBOX_GIT_TIMEOUT_MS, signal },
  );
  if (result.exitCode !== 0)
    return { refused: `git status after the set-up failed (exit ${result.exitCode})` };
  const paths = result.stdoutTail
    .split('\0')
    .filter((entry) => entry.startsWith('!! ') || entry.startsWith('?? '))
    .map((entry) => entry.slice(3).replace(/\/$/, ''))
    .filter((entry) => entry !== '' && !entry.startsWith('-') && !entry.split('/').includes('..'));
  return { paths };
}
