/**
 * Preparing a task's workspace: the task branch and the person's worktree on the host, and the sandbox
 * repository (snapshot of the base minus excluded paths) with read-only scope applied. The user's
 * repository itself is never mounted into the sandbox. See docs/isolation.md for the guarantees.
 */
import { CONFIG_FILE_NAME } from '../config/load.js';
import { existsSync } from 'node:fs';
import { appendFile, readFile, stat, writeFile, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { MountSpec } from '../core/ports.js';
import type { DiskCapKind } from '../core/records.js';
import { removeCapVolume } from '../sandbox/cap-volume.js';
import { UserError } from '../errors.js';
import { git, splitNul, tryGit } from './git/git-command.js';
import { inspectRepository } from './git/inspect-repository.js';
import { SANDBOX_WORKDIR, sandboxGitEnvironment, taskLayout, type TaskLayout } from './layout.js';
import { mountRepositoryVolume, sandboxReusable } from './sandbox-repo/repository-volume.js';
import {
  applyScopePermissions,
  guardIdsFor,
  type OwnershipApplier,
  type UserIds,
} from './scope/permissions.js';
import { fillSandboxRepository, initSandboxRepository } from './sandbox-repo/sandbox-repository.js';
import { compileScope, type Scope, type ScopeMatcher } from './scope/scope.js';
import { createSnapshot, type Snapshot } from './sandbox-repo/snapshot.js';
import { addWorktree, worktreeNeeded } from './git/task-worktree.js';
import { resolveCommit } from './git/tree-entries.js';
import {
  readCommitMap,
  readWorkspaceState,
  writeJsonAtomic,
  type WorkspaceState,
} from './workspace-state.js';

export interface PrepareTaskWorkspaceOptions {
  /** Any directory inside the user's repository. */
  repoRoot: string;
  taskId: string;
  /** Base of a new task branch (`--base REF`); default HEAD. Ignored when the branch already exists. */
  base?: string;
  scope: Scope;
  /** Override the worker's uid/gid (default: the repository owner's, or 10001 when that is root). */
  workerUser?: UserIds;
  /** Applies the read-only ownership when the runner is not root (a privileged helper container). */
  applier?: OwnershipApplier;
  /** Use `applier` even as root (tests of the non-root path). */
  preferApplier?: boolean;
  /** No worker runs in it (the integration sandbox): nothing read-only, so its tree can be replaced. */
  noReadOnly?: boolean;
  /** Told how long each preparation step took (the benchmark's breakdown). */
  onStep?: (step: PreparationStep, ms: number) => void;
  /**
   * Return before the person's worktree is checked out and let it finish in the background
   * (`worktreeReady`). Only the sandbox's checkout is on the way to the first worker request; the worktree is
   * for the person, and for the first sync-back, which awaits it.
   */
  deferWorktree?: boolean;
  /**
   * Told as soon as a sandbox can be created over the workspace (the sandbox repository's directory exists,
   * the worker's user is known), before the files are checked out into it: the container starts meanwhile.
   */
  onMountable?: (mount: WorkspaceMount) => void;
  /** `sandbox.disk.repository` and `.hard`: the sandbox repository's capped file system (repository-volume.ts). */
  diskCap?: DiskCapRequest;
}

/** A capped directory's cap, and whether it gets a file system of its own (else why not: the watched cap's reason). */
export interface DiskCapRequest {
  capBytes: number;
  hard: boolean;
  /** Why the cap is watched when `hard` is false (default: the configuration says so). */
  watchedReason?: string;
}

/** The steps of a preparation, as the benchmark reports them. */
export type PreparationStep =
  'inspect' | 'branch' | 'worktree' | 'snapshot' | 'sandbox repository' | 'permissions';

/** What a sandbox needs to be created over the workspace; known before the files are checked out. */
export interface WorkspaceMount {
  runDir: string;
  workerUser: UserIds;
  /** For SandboxSpec: the sandbox repository at /workspace, nothing else of the user's. */
  mounts: MountSpec[];
  workdir: string;
  /** For SandboxSpec.env: lets git inside trust /workspace, which belongs to the guard uid. */
  env: Record<string, string>;
  /** The kind of the sandbox repository's disk cap (absent: no cap was asked for). */
  repositoryCap?: DiskCapKind;
}

/** Everything the runner needs to start the sandbox and, later, to sync and gather facts. */
export interface PreparedWorkspace extends WorkspaceMount {
  taskId: string;
  repoRoot: string;
  branch: string;
  baseSha: string;
  snapshotSha: string;
  /** The real commit the current sandbox repository's snapshot was made from. */
  snapshotOf: string;
  worktreePath: string;
  sandboxRepoPath: string;
  /** The user's main working tree had uncommitted or untracked changes (not brought into the sandbox). */
  dirtyStart: boolean;
  dirtyPaths: string[];
  detachedHead: boolean;
  /** The task branch existed before this call (a later run of the same task). */
  branchReused: boolean;
  sandboxReused: boolean;
  worktreeCreated: boolean;
  /** Settles when the person's worktree is there (at once unless `deferWorktree`); rejects when it failed. */
  worktreeReady: Promise<void>;
  guardUser: UserIds;
  /** False when the runner could not chown (not root): read-only scope is then only a write-bit courtesy. */
  readOnlyEnforced: boolean;
  scope: Scope;
}

const GITIGNORE_LINES = ['worktrees/', 'sandboxes/', 'runs/'];

/** `.agent-runner/.gitignore`: worktrees, sandboxes and run data stay local; notes stay trackable. */
async function ensureStateGitignore(stateDir: string): Promise<void> {
  await mkdir(stateDir, { recursive: true });
  const file = path.join(stateDir, '.gitignore');
  const existing = existsSync(file) ? await readFile(file, 'utf8') : null;
  if (existing === null) {
    await writeFile(
      file,
      '# agent-runner: local worktrees, sandboxes and run data. Task notes (task-*.md) stay trackable.\n' +
        `${GITIGNORE_LINES.join('\n')}\n`,
    );
    return;
  }
  const present = new Set(existing.split('\n').map((line) => line.trim()));
  const missing = GITIGNORE_LINES.filter((line) => !present.has(line));
  if (missing.length > 0)
    await appendFile(file, `${existing.endsWith('\n') ? '' : '\n'}${missing.join('\n')}\n`);
}

async function dirtyPathsOf(repoRoot: string): Promise<string[]> {
  const output = await git(
    [
      'status',
      '--porcelain=v1',
      '-z',
      '--untracked-files=normal',
      '--no-renames',
      '--',
      '.',
      ':(exclude).agent-runner',
      // agent-runner's own config is not the user's work in progress (an untracked one is the usual case).
      `:(exclude)${CONFIG_FILE_NAME}`,
    ],
    { cwd: repoRoot },
  );
  return splitNul(output).map((entry) => entry.slice(3));
}

async function workerUserFor(repoRoot: string): Promise<UserIds> {
  const stats = await stat(repoRoot);
  // Never run the worker as root: a root-owned repository gets the conventional unprivileged 10001.
  return stats.uid === 0
    ? { uid: 10001, gid: 10001 }
    : { uid: stats.uid, gid: stats.gid === 0 ? stats.uid : stats.gid };
}

async function resolveBase(repoRoot: string, base: string | undefined): Promise<string> {
  const sha = await resolveCommit(repoRoot, base ?? 'HEAD');
  if (sha === null) {
    throw new UserError(
      'usage',
      `--base ${base ?? 'HEAD'} does not name a commit in ${repoRoot}. Give a branch, tag or commit id (see \`git log --oneline\`).`,
    );
  }
  return sha;
}

const noop = (): void => undefined;

/** Awaits every one of `work` (none is left running), then throws the first failure if any. */
async function together<T extends readonly unknown[]>(work: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(work);
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return settled.map((result) => (result as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/** Times a preparation step for `onStep`. */
type Step = <T>(name: PreparationStep, work: () => Promise<T>) => Promise<T>;

/** Runs each step and tells `options.onStep` how long it took. */
function stepTimer(options: Pick<PrepareTaskWorkspaceOptions, 'onStep'>): Step {
  return async <T>(name: PreparationStep, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const value = await work();
    options.onStep?.(name, performance.now() - started);
    return value;
  };
}

/** Makes the task branch at `base` (default HEAD) when it does not exist yet; returns the task's base commit. */
async function ensureTaskBranch(
  repoRoot: string,
  layout: TaskLayout,
  previous: WorkspaceState | null,
  existingBranchHead: string | null,
  base: string | undefined,
): Promise<string> {
  if (existingBranchHead === null) {
    const baseSha = await resolveBase(repoRoot, base);
    await git(['branch', '--no-track', layout.branch, baseSha], { cwd: repoRoot });
    return baseSha;
  }
  if (previous !== null) return previous.baseSha;
  const mergeBase = await tryGit(['merge-base', 'HEAD', layout.branchRef], { cwd: repoRoot });
  return base
    ? await resolveBase(repoRoot, base)
    : mergeBase.exitCode === 0
      ? mergeBase.stdout.trim()
      : existingBranchHead;
}

/** What a sandbox is created with over the workspace: the sandbox repository at /workspace and git's settings. */
function workspaceMount(
  layout: TaskLayout,
  workerUser: UserIds,
  repositoryCap?: DiskCapKind,
): WorkspaceMount {
  return {
    runDir: layout.runDir,
    workerUser,
    mounts: [{ hostPath: layout.sandboxRepoPath, containerPath: SANDBOX_WORKDIR, readOnly: false }],
    workdir: SANDBOX_WORKDIR,
    env: sandboxGitEnvironment(),
    ...(repositoryCap ? { repositoryCap } : {}),
  };
}

/** What preparing the sandbox repository and its permissions works from. */
interface SandboxPreparation {
  options: PrepareTaskWorkspaceOptions;
  step: Step;
  repoRoot: string;
  gitCommonDir: string;
  layout: TaskLayout;
  scope: ScopeMatcher;
  baseSha: string;
  branchHead: string;
  /** The state of the sandbox repository that is reused; null when it is made now. */
  reused: WorkspaceState | null;
  workerUser: UserIds;
  guardUser: UserIds;
}

/** Makes the sandbox repository from a snapshot of the branch head and records it; returns its state. */
async function makeSandboxRepository(preparation: SandboxPreparation): Promise<WorkspaceState> {
  const { options, step, repoRoot, layout, scope, baseSha, branchHead } = preparation;
  // The directory was made by this call (and may be mounted already): when the snapshot or the sandbox
  // repository fails, it goes, so the next run does not find a directory it does not know.
  const removeMadeDirectory = async (error: unknown): Promise<never> => {
    await removeCapVolume(layout.sandboxRepoPath).catch(() => undefined);
    await rm(layout.sandboxRepoPath, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  };
  const [snapshot] = await together<[Snapshot, void]>([
    step('snapshot', () => createSnapshot(repoRoot, branchHead, scope, layout.snapshotRef)),
    initSandboxRepository({
      objectsDir: path.join(preparation.gitCommonDir, 'objects'),
      sandboxRepoPath: layout.sandboxRepoPath,
      branch: layout.branch,
    }),
  ]).catch(removeMadeDirectory);
  await step('sandbox repository', () =>
    fillSandboxRepository({
      repoRoot,
      sandboxRepoPath: layout.sandboxRepoPath,
      snapshotSha: snapshot.sha,
      branch: layout.branch,
    }),
  ).catch(removeMadeDirectory);
  const commitMap = await readCommitMap(layout.commitMapPath);
  commitMap.map[snapshot.sha] = branchHead;
  await writeJsonAtomic(layout.commitMapPath, commitMap);
  const state: WorkspaceState = {
    version: 1,
    taskId: options.taskId,
    baseSha,
    snapshotSha: snapshot.sha,
    snapshotOf: branchHead,
    exclude: [...options.scope.exclude],
    createdAt: new Date().toISOString(),
  };
  await writeJsonAtomic(layout.workspaceStatePath, state);
  return state;
}

/** The sandbox repository (reused or made now), then its permissions. */
async function prepareSandbox(
  preparation: SandboxPreparation,
): Promise<{ state: WorkspaceState; readOnlyEnforced: boolean }> {
  const { options, step, layout } = preparation;
  const state = preparation.reused ?? (await makeSandboxRepository(preparation));
  const permissions = await step('permissions', () =>
    applyScopePermissions({
      sandboxRepoPath: layout.sandboxRepoPath,
      scope: options.noReadOnly ? { ...preparation.scope, isWritable: () => true } : preparation.scope,
      worker: preparation.workerUser,
      guard: preparation.guardUser,
      ...(options.applier ? { applier: options.applier } : {}),
      ...(options.preferApplier ? { preferApplier: true } : {}),
    }),
  );
  return { state, readOnlyEnforced: permissions.readOnlyEnforced };
}

/**
 * Makes (or reuses) everything a task works in. Idempotent: a later run of the same task reuses the branch,
 * the worktree and the sandbox repository (with the worker's uncommitted files), re-creating what is missing.
 */
export async function prepareTaskWorkspace(options: PrepareTaskWorkspaceOptions): Promise<PreparedWorkspace> {
  const step = stepTimer(options);
  const repository = await step('inspect', () => inspectRepository(options.repoRoot));
  const repoRoot = repository.root;
  const layout = taskLayout(repoRoot, options.taskId);
  const scope = compileScope(options.scope);
  await ensureStateGitignore(layout.stateDir);

  const previous = await readWorkspaceState(layout.workspaceStatePath);
  const existingBranchHead = await resolveCommit(repoRoot, layout.branchRef);
  const baseSha = await ensureTaskBranch(repoRoot, layout, previous, existingBranchHead, options.base);
  const makeWorktree = await worktreeNeeded(repoRoot, layout);
  const branchHead = existingBranchHead ?? baseSha;

  // An earlier run's capped file system holds its sandbox repository: mounted before it is looked at.
  const earlierCap = await mountRepositoryVolume(layout, options, null);
  const reusable = await sandboxReusable(layout, previous, options);
  const workerUser = options.workerUser ?? (await workerUserFor(repoRoot));
  const guardUser = guardIdsFor(workerUser);
  const made = earlierCap ?? (await mountRepositoryVolume(layout, options, { sha: branchHead }));
  const mount = workspaceMount(layout, workerUser, made);
  if (!reusable) await mkdir(layout.sandboxRepoPath, { recursive: true });
  options.onMountable?.(mount);

  // The sandbox repository, then its permissions. Independent of the person's worktree and of the status of
  // their main tree, which run at the same time (each writes or reads its own files).
  const sandboxSide = prepareSandbox({
    options,
    step,
    repoRoot,
    gitCommonDir: repository.gitCommonDir,
    layout,
    scope,
    baseSha,
    branchHead,
    reused: reusable ? previous : null,
    workerUser,
    guardUser,
  });
  // A deferred worktree is checked out once the sandbox is: on 2 cores two checkouts at once slow the one on
  // the way to the first worker request. Otherwise both run at once, for the shortest total.
  const worktreeMayStart = options.deferWorktree ? sandboxSide.then(noop, noop) : Promise.resolve();
  const worktree = makeWorktree
    ? worktreeMayStart.then(() => step('worktree', () => addWorktree(repoRoot, layout)))
    : Promise.resolve();
  // A deferred worktree's failure is reported where it is awaited, not as an unhandled rejection meanwhile.
  worktree.catch(noop);
  const [dirtyPaths, , sandbox] = await together<
    [string[], void, Awaited<ReturnType<typeof prepareSandbox>>]
  >([
    step('inspect', () => dirtyPathsOf(repoRoot)),
    options.deferWorktree ? Promise.resolve() : worktree,
    sandboxSide,
  ]);

  return {
    taskId: options.taskId,
    repoRoot,
    branch: layout.branch,
    baseSha,
    snapshotSha: sandbox.state.snapshotSha,
    snapshotOf: sandbox.state.snapshotOf,
    worktreePath: layout.worktreePath,
    sandboxRepoPath: layout.sandboxRepoPath,
    dirtyStart: dirtyPaths.length > 0,
    dirtyPaths,
    detachedHead: repository.detached,
    branchReused: existingBranchHead !== null,
    sandboxReused: reusable,
    worktreeCreated: makeWorktree,
    worktreeReady: worktree,
    ...mount,
    guardUser,
    readOnlyEnforced: sandbox.readOnlyEnforced,
    scope: options.scope,
  };
}
