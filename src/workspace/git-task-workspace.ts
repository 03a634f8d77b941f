/**
 * The core's TaskWorkspacePort over the workspace modules: prepare the task branch, worktree and sandbox
 * repository; after each run bring the commits back and observe the facts; run the DoD checks; preserve
 * uncommitted work on a WIP ref.
 */
import type { Config, ReplayCaps } from '../config/schema.js';
import type {
  CheckBounds,
  PreparedTask,
  SandboxRuntime,
  TaskWorkspacePort,
  WorkspacePreparation,
  MissingProgram,
} from '../core/ports.js';
import type { AcceptanceCriterion, CriterionCheckResult, DodOutcome, TaskFacts } from '../core/types.js';
import { runCriteriaChecks } from './checks/criteria-checks.js';
import { resolveDodChecks } from './checks/detect-dod-checks.js';
import { runDodChecks } from './checks/dod-checks.js';
import { git, tryGit } from './git/git-command.js';
import { removeTaskSandbox } from './sandbox-repo/remove-task-sandbox.js';
import { SANDBOX_GIT_LOOKUP_MS, sandboxGit } from './sandbox-repo/sandbox-git.js';
import { taskLayout, wipRef } from './layout.js';
import type { OwnershipApplier } from './scope/permissions.js';
import {
  prepareTaskWorkspace,
  type PreparedWorkspace,
  type WorkspaceMount,
  type DiskCapRequest,
} from './prepare-task-workspace.js';
import { scopeStatement } from './scope/scope-statement.js';
import type { Scope } from './scope/scope.js';
import { fetchFromSandbox, syncBack } from './sandbox-repo/sync-back.js';
import { collectFacts } from './task-facts.js';
import { readCommitMap } from './workspace-state.js';
import { missingPrograms } from './checks/preflight.js';
import { sealCheckCaches } from './checks/check-caches.js';
import { keeperIdsFor } from './scope/permissions.js';
import { userField } from '../sandbox/container-options.js';

/** A full commit id (SHA-1 or SHA-256). */
const COMMIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The diff shown to the assessment is cut to this many characters. */
export const ASSESSMENT_DIFF_CHARS = 16_000;

export interface GitTaskWorkspaceOptions {
  repoRoot: string;
  taskId: string;
  base?: string;
  scope: Scope;
  dod: Config['dod'];
  dodSkipped: boolean;
  graceMs: number;
  /** Bounds of the replay (`sandbox.replay`); default: the config's defaults. */
  replayCaps?: ReplayCaps;
  /** Applies the read-only ownership when the runner is not root (see permissions.ts). */
  applier?: OwnershipApplier;
  /** No worker runs in it: nothing read-only (see PrepareTaskWorkspaceOptions.noReadOnly). */
  noReadOnly?: boolean;
  /** The sandbox repository's disk cap (see PrepareTaskWorkspaceOptions.diskCap). */
  diskCap?: DiskCapRequest;
}

// Saves the sandbox's uncommitted work (tracked and untracked, ignored files aside) as a commit on
// refs/agent-runner/wip without touching the branch, the index or the files. A fixed script: no model text.
const PRESERVE_SCRIPT = [
  'set -e',
  'cd /workspace',
  'test -n "$(git status --porcelain)" || exit 3',
  'export GIT_INDEX_FILE=/tmp/agent-runner-wip-index',
  'rm -f "$GIT_INDEX_FILE"',
  'git read-tree HEAD',
  'git add -A',
  'tree=$(git write-tree)',
  'commit=$(git commit-tree "$tree" -p HEAD -m "agent-runner: uncommitted work of the worker, preserved")',
  'git update-ref refs/agent-runner/wip "$commit"',
  'rm -f "$GIT_INDEX_FILE"',
].join('\n');

export class GitTaskWorkspace implements TaskWorkspacePort {
  private prepared: PreparedWorkspace | null = null;

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly options: GitTaskWorkspaceOptions,
  ) {}

  private mounted: WorkspaceMount | null = null;

  /** Set after prepare(). */
  get workspace(): PreparedWorkspace {
    if (!this.prepared) throw new Error('workspace not prepared');
    return this.prepared;
  }

  /** Set once the preparation says the workspace is mountable: what the sandbox provider mounts. */
  get mount(): WorkspaceMount {
    if (!this.mounted) throw new Error('workspace not mountable yet');
    return this.mounted;
  }

  prepare(): WorkspacePreparation {
    let isMountable!: () => void;
    const mountable = new Promise<void>((resolve) => {
      isMountable = resolve;
    });
    const prepared = prepareTaskWorkspace({
      repoRoot: this.options.repoRoot,
      taskId: this.options.taskId,
      base: this.options.base,
      scope: this.options.scope,
      ...(this.options.applier ? { applier: this.options.applier } : {}),
      ...(this.options.noReadOnly ? { noReadOnly: true } : {}),
      ...(this.options.diskCap ? { diskCap: this.options.diskCap } : {}),
      // The worktree is checked out while the sandbox starts and the first worker run goes on; every step
      // that brings commits back (observe, preserveUncommitted) awaits it first.
      deferWorktree: true,
      onMountable: (mount) => {
        this.mounted = mount;
        isMountable();
      },
    }).then((workspace): PreparedTask => {
      this.prepared = workspace;
      return {
        branch: workspace.branch,
        baseSha: workspace.baseSha,
        worktreePath: workspace.worktreePath,
        dirtyStart: workspace.dirtyStart,
        scopeStatement: scopeStatement(this.options.scope),
      };
    });
    // A preparation that fails before the workspace is mountable rejects both.
    return { mountable: Promise.race([mountable, prepared.then(() => undefined)]), prepared };
  }

  /** Waits for the background worktree checkout, whatever its outcome: nothing of it outlives the task. */
  async settled(): Promise<void> {
    await this.prepared?.worktreeReady.catch(() => undefined);
  }

  /**
   * Removes the sandbox repository (a task handed off before anything ran in it, a throwaway check), with the
   * ownership applier when the runner cannot delete the worker's files itself; the branch and the worktree stay.
   */
  async removeSandbox(): Promise<void> {
    await this.settled();
    await removeTaskSandbox(
      this.options.repoRoot,
      this.options.taskId,
      this.options.applier ? { applier: this.options.applier } : {},
    );
  }

  async observe(sandboxId: string, signal?: AbortSignal): Promise<TaskFacts> {
    const workspace = this.workspace;
    await workspace.worktreeReady;
    const sync = await syncBack({
      repoRoot: workspace.repoRoot,
      taskId: workspace.taskId,
      scope: this.options.scope,
      ...(this.options.replayCaps ? { caps: this.options.replayCaps } : {}),
      ...(signal ? { signal } : {}),
    });
    const facts = await collectFacts(this.runtime, sandboxId, {
      repoRoot: workspace.repoRoot,
      taskId: workspace.taskId,
      branch: workspace.branch,
      baseSha: workspace.baseSha,
      scope: this.options.scope,
      sync,
      ...(signal ? { signal } : {}),
    });
    // Host git on the user's repository only: these are the replayed, real commits.
    const range = `${workspace.baseSha}..${facts.headSha}`;
    const host = { cwd: workspace.repoRoot, ...(signal ? { signal } : {}) };
    const diffStat = facts.commits.count ? await git(['diff', '--stat=100', range], host) : '';
    const diff = facts.commits.count ? (await tryGit(['diff', '--no-color', range], host)).stdout : '';
    return {
      baseSha: facts.baseSha,
      headSha: facts.headSha,
      commits: facts.commits.list,
      dirty: facts.dirty,
      uncommitted: facts.uncommittedFiles.map((change) => `${change.status.trim()} ${change.path}`),
      changedFiles: facts.changedFiles.map((file) => file.path),
      diffStat,
      diff:
        diff.length > ASSESSMENT_DIFF_CHARS
          ? `${diff.slice(0, ASSESSMENT_DIFF_CHARS)}\n[diff cut at ${ASSESSMENT_DIFF_CHARS} characters]`
          : diff,
      scopeViolations: facts.scopeViolations.map(
        (violation) => `${violation.path} (${violation.access.replace('_', ' ')}, ${violation.where})`,
      ),
      taskBranch: { name: facts.branch, headSha: facts.branchHeadSha },
      ...(facts.pendingRef ? { pendingRef: facts.pendingRef } : {}),
      ...(facts.pendingReason ? { pendingReason: facts.pendingReason } : {}),
      ...(facts.problems.length > 0 ? { problems: facts.problems } : {}),
      ...(sync.capped ? { replayCapped: sync.capped } : {}),
    };
  }

  async sealCheckCaches(sandboxId: string, signal?: AbortSignal): Promise<number | null> {
    return sealCheckCaches(
      this.runtime,
      sandboxId,
      userField(keeperIdsFor(this.workspace.workerUser)),
      signal,
    );
  }

  async runDod(
    sandboxId: string,
    facts: Pick<TaskFacts, 'dirty'>,
    bounds: CheckBounds,
    options: { warmCaches?: boolean } = {},
  ): Promise<DodOutcome> {
    const resolved = await resolveDodChecks(
      { checks: this.options.dod.checks, skip: this.options.dodSkipped || this.options.dod.skip },
      // Detected from the user's repository, not from the sandbox, whose files the worker controls.
      this.workspace.repoRoot,
    );
    const source =
      resolved.source === 'config' ? 'config' : `detected: ${resolved.detectedFrom.join('; ') || 'nothing'}`;
    if (resolved.checks.length === 0)
      return { status: 'none', results: [], ranOnDirtyTree: facts.dirty, source };
    // Every check is clipped to the task's wall clock left; the signal also ends the step when it runs out.
    const clipped = resolved.checks.map((check) => ({
      ...check,
      timeout: Math.max(1000, Math.min(check.timeout, bounds.timeoutMs)),
    }));
    const results = await runDodChecks(this.runtime, sandboxId, clipped, {
      cache: options.warmCaches ? 'warm' : 'use',
      skip: resolved.skip,
      signal: bounds.signal,
      graceMs: this.options.graceMs,
    });
    const status = resolved.skip
      ? 'skipped'
      : results.every((result) => result.status === 'passed')
        ? 'passed'
        : 'failed';
    return {
      status,
      source,
      ranOnDirtyTree: results.some((result) => result.ranOnDirtyTree),
      // The recorded result is the check's result without the run's own bookkeeping.
      results: results.map(
        ({ timeoutMs: _timeout, ranOnDirtyTree: _dirty, interrupted: _cut, ...result }) => result,
      ),
    };
  }

  async missingPrograms(
    sandboxId: string,
    commands?: readonly { label: string; command: string }[],
    signal?: AbortSignal,
  ): Promise<MissingProgram[]> {
    const checks =
      commands ??
      (this.options.dodSkipped || this.options.dod.skip
        ? []
        : (await resolveDodChecks(this.options.dod, this.workspace.repoRoot)).checks.map((check) => ({
            label: `DoD check ${check.name}`,
            command: check.command,
          })));
    return missingPrograms(this.runtime, sandboxId, checks, signal);
  }

  async runCriteriaChecks(
    sandboxId: string,
    criteria: readonly AcceptanceCriterion[],
    facts: TaskFacts,
    bounds: CheckBounds,
    dod?: DodOutcome,
  ): Promise<CriterionCheckResult[]> {
    return runCriteriaChecks(this.runtime, sandboxId, criteria, facts, {
      repoRoot: this.workspace.repoRoot,
      ...(dod ? { dod } : {}),
      timeoutMs: bounds.timeoutMs,
      graceMs: this.options.graceMs,
      ...(bounds.signal ? { signal: bounds.signal } : {}),
    });
  }

  async checkedOutHead(sandboxId: string, signal?: AbortSignal): Promise<string | null> {
    // git inside the sandbox (its repository is the worker's); the answer is only looked up, never trusted.
    // A FIFO at .git/config or .git/HEAD blocks it: a short limit, and the task's stop ends it at once.
    const result = await sandboxGit(
      this.runtime,
      sandboxId,
      ['rev-parse', '--verify', '-q', 'HEAD^{commit}'],
      { timeoutMs: SANDBOX_GIT_LOOKUP_MS, signal },
    );
    const sandboxSha = result.stdoutTail.trim();
    if (result.exitCode !== 0 || !COMMIT_ID.test(sandboxSha)) return null;
    const commitMap = await readCommitMap(this.layout().commitMapPath);
    return commitMap.map[sandboxSha] ?? null;
  }

  async preserveUncommitted(sandboxId: string, bounds: CheckBounds): Promise<string | null> {
    const workspace = this.workspace;
    // The worker's git files can block git in the sandbox and the host's fetch alike: both within the bounds.
    const result = await this.runtime.exec(sandboxId, ['bash', '-c', PRESERVE_SCRIPT], {
      timeoutMs: bounds.timeoutMs,
      graceMs: 1_000,
      ...(bounds.signal ? { signal: bounds.signal } : {}),
    });
    if (result.exitCode === 3) return null;
    if (result.exitCode !== 0) return null;
    const ref = wipRef(workspace.taskId);
    // fetchFromSandbox: `-c safe.directory` does not reach upload-pack for a local path (git drops -c there).
    const fetched = await fetchFromSandbox({
      repoRoot: workspace.repoRoot,
      taskId: workspace.taskId,
      sourceRef: 'refs/agent-runner/wip',
      targetRef: ref,
      timeoutMs: bounds.timeoutMs,
      ...(bounds.signal ? { signal: bounds.signal } : {}),
    });
    return fetched.problem === null ? ref : null;
  }

  /** Where the task keeps its files, for messages. */
  layout() {
    return taskLayout(this.options.repoRoot, this.options.taskId);
  }
}
