/**
 * Bringing the worker's commits back: fetch the sandbox's task branch (upload-pack only, the one host git
 * command that reads the worker-controlled repository), replay each new commit onto the real history with
 * the real base's excluded files and `.agent-runner/` put back, then move the task branch and the person's
 * worktree.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AgentRunnerError } from '../../errors.js';
import { git, tryGit } from '../git/git-command.js';
import { keptEntriesOf, keptPathsTouched } from './kept-paths.js';
import { taskLayout, type TaskLayout } from '../layout.js';
import { sandboxReadProblem } from './sandbox-git-files.js';
import { readCommit, type ParsedCommit } from '../git/commit-object.js';
import { sandboxGitDir } from './sandbox-repository.js';
import { DEFAULT_REPLAY_CAPS } from '../../config/schema.js';
import type { ReplayCap } from '../../core/types.js';
import { replayCapOver, type ReplayCaps } from './replay-caps.js';
import { compileScope, type Scope, type ScopeMatcher } from '../scope/scope.js';
import { buildTree, listTree, resolveCommit, type IndexEdit, type TreeEntry } from '../git/tree-entries.js';
import { readCommitMap, readWorkspaceState, writeJsonAtomic, type CommitMap } from '../workspace-state.js';

export interface SyncBackOptions {
  repoRoot: string;
  taskId: string;
  scope: Scope;
  /** Default: the config's defaults (`sandbox.replay`). */
  caps?: ReplayCaps;
  /** Ctrl-C, SIGTERM or the wall clock: the fetch and the replay stop at once (git's process group ended). */
  signal?: AbortSignal;
}

export interface ReplayedCommit {
  sandboxSha: string;
  sha: string;
  subject: string;
  /**
   * Paths the replay keeps from the base (excluded ones, and the runner's own `.agent-runner/`) that this commit
   * added, changed or (for `.agent-runner/`, which the sandbox holds) deleted: the base version won.
   */
  excludedTouched: string[];
}

export interface SyncBackResult {
  /** Head of the sandbox's task branch (a sandbox commit id), or null when it could not be read. */
  sandboxHeadSha: string | null;
  /** Real commit id of the worker's head after replay (what the facts describe). */
  headSha: string;
  /** Where `agent-runner/<TASK-ID>` points now. Differs from headSha when the commits are pending. */
  branchHeadSha: string;
  /** Commits replayed by this call (earlier ones are in commit-map.json). */
  commits: ReplayedCommit[];
  /** Set when the replayed head could not be moved onto the branch; the commits are kept under this ref. */
  pendingRef: string | null;
  pendingReason: 'not_fast_forward' | 'worktree_conflict' | null;
  /** git's own words on why the branch or the worktree did not move, as it wrote them (may quote worker data). */
  pendingDetail: string | null;
  worktreeUpdated: boolean;
  /** Why nothing could be brought back (sandbox .git unusable, branch deleted by the worker, ...). */
  problem: string | null;
  /** The bound of the replay the worker's commits went over: nothing was replayed, moved or checked out. */
  capped: ReplayCap | null;
}

async function replayCommit(
  repoRoot: string,
  commit: ParsedCommit,
  parents: string[],
  scope: ScopeMatcher,
  baseKept: readonly TreeEntry[],
): Promise<{ sha: string; excludedTouched: string[] }> {
  const workerKept = (await listTree(repoRoot, commit.tree)).filter((entry) => scope.keepsBase(entry.path));
  const excludedTouched = keptPathsTouched(workerKept, baseKept, scope);
  const edits: IndexEdit[] = [
    ...workerKept.map((entry): IndexEdit => ({ kind: 'remove', path: entry.path })),
    ...baseKept.map((entry): IndexEdit => ({ kind: 'add', entry })),
  ];
  const tree = edits.length === 0 ? commit.tree : await buildTree(repoRoot, commit.tree, edits);
  const env = {
    GIT_AUTHOR_NAME: commit.author.name,
    GIT_AUTHOR_EMAIL: commit.author.email,
    GIT_AUTHOR_DATE: commit.author.date,
    GIT_COMMITTER_NAME: commit.committer.name,
    GIT_COMMITTER_EMAIL: commit.committer.email,
    GIT_COMMITTER_DATE: commit.committer.date,
  };
  const parentArgs = parents.flatMap((parent) => ['-p', parent]);
  const sha = (
    await git(['commit-tree', tree, ...parentArgs], { cwd: repoRoot, env, input: commit.message })
  ).trim();
  return { sha, excludedTouched };
}

async function isAncestor(repoRoot: string, ancestor: string, descendant: string): Promise<boolean> {
  return (
    (await tryGit(['merge-base', '--is-ancestor', ancestor, descendant], { cwd: repoRoot })).exitCode === 0
  );
}

/**
 * How the host starts upload-pack on the sandbox's git directory: `--strict`, so it uses that directory as it
 * is, and never a `.git` (a `gitdir:` file or a link) the worker planted inside it to send host git elsewhere.
 */
const STRICT_UPLOAD_PACK = 'git-upload-pack --strict';

/**
 * Copies one ref of the sandbox repository into the user's repository (`+source:target`, forced). The only
 * way host git reads the sandbox repository: upload-pack only, after sandboxGitDir's checks and a check of
 * every entry it reads, with every received object checked. Returns a problem in words instead of throwing,
 * a fetch stopped at its time limit included.
 */
export async function fetchFromSandbox(options: {
  repoRoot: string;
  taskId: string;
  sourceRef: string;
  targetRef: string;
  signal?: AbortSignal;
  /** The fetch's own limit (default: host git's); the finish after a stop gives a short one. */
  timeoutMs?: number;
}): Promise<{ problem: string | null }> {
  const layout = taskLayout(options.repoRoot, options.taskId);
  const checked = await sandboxGitDir(layout.sandboxRepoPath);
  if (checked.gitDir === null) return { problem: checked.problem };
  const refused = await sandboxReadProblem(checked.gitDir);
  if (refused !== null) return { problem: `refusing to read ${checked.gitDir}: ${refused}` };
  // safe.directory goes through a system config file because git drops command-line settings (GIT_CONFIG_*)
  // when it starts upload-pack for a local path; it names this one directory only.
  const fetchConfig = path.join(layout.sandboxDir, 'host-fetch.gitconfig');
  await writeFile(fetchConfig, `[safe]\n\tdirectory = ${checked.gitDir}\n`);
  const failed = (reason: string) => ({
    problem: `could not fetch ${options.sourceRef} from the sandbox: ${reason}`,
  });
  try {
    const fetched = await tryGit(
      [
        'fetch',
        '-q',
        '--no-tags',
        '--no-write-fetch-head',
        '--no-recurse-submodules',
        `--upload-pack=${STRICT_UPLOAD_PACK}`,
        checked.gitDir,
        `+${options.sourceRef}:${options.targetRef}`,
      ],
      {
        cwd: options.repoRoot,
        env: { GIT_CONFIG_SYSTEM: fetchConfig },
        config: { 'transfer.fsckObjects': 'true', 'protocol.file.allow': 'always', 'gc.auto': '0' },
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      },
    );
    return fetched.exitCode === 0 ? { problem: null } : failed(fetched.stderr.trim());
  } catch (error) {
    // A fetch cut by Ctrl-C or the wall clock is not a problem of the sandbox: the task stops with the cut.
    if (options.signal?.aborted) throw error;
    if (error instanceof AgentRunnerError && error.code === 'workspace_failed') return failed(error.message);
    throw error;
  }
}

/** The sandbox commits up to `sandboxHead` that are not replayed yet, parents first. */
async function commitsToReplay(
  repoRoot: string,
  sandboxHead: string,
  commitMap: CommitMap,
): Promise<string[]> {
  const known = Object.keys(commitMap.map);
  return (
    await git(['rev-list', '--reverse', '--topo-order', '--ignore-missing', '--stdin'], {
      cwd: repoRoot,
      input: `${sandboxHead}\n${known.map((sha) => `^${sha}`).join('\n')}\n`,
    })
  )
    .split('\n')
    .filter((line) => line.length > 0);
}

/**
 * Replays each sandbox commit of `toReplay` onto its parents' real commits, with the kept entries of
 * `snapshotOf` (excluded files, `.agent-runner/`) put back, and records each in `commitMap`.
 */
async function replayCommits(
  repoRoot: string,
  toReplay: readonly string[],
  commitMap: CommitMap,
  scope: ScopeMatcher,
  snapshotOf: string,
  signal?: AbortSignal,
): Promise<ReplayedCommit[]> {
  const baseKept = toReplay.length > 0 ? await keptEntriesOf(repoRoot, snapshotOf, scope) : [];
  const commits: ReplayedCommit[] = [];
  for (const sandboxSha of toReplay) {
    // Between two commits too: each git call is short, the whole replay need not be.
    if (signal?.aborted) throw replayCut(commits.length, toReplay.length);
    const commit = await readCommit(repoRoot, sandboxSha, signal);
    const parents = commit.parents.map((parent) => {
      const real = commitMap.map[parent];
      if (real === undefined)
        throw new AgentRunnerError(
          'workspace_failed',
          `Parent ${parent} of sandbox commit ${sandboxSha} was not replayed.`,
        );
      return real;
    });
    const replayed = await replayCommit(repoRoot, commit, parents, scope, baseKept);
    commitMap.map[sandboxSha] = replayed.sha;
    if (replayed.excludedTouched.length > 0)
      commitMap.excludedTouched[replayed.sha] = replayed.excludedTouched;
    commits.push({
      sandboxSha,
      sha: replayed.sha,
      subject: commit.message.split('\n')[0] ?? '',
      excludedTouched: replayed.excludedTouched,
    });
  }
  return commits;
}

/** The error of a replay cut by Ctrl-C or the wall clock (the commits replayed so far are not recorded). */
function replayCut(done: number, total: number): AgentRunnerError {
  return new AgentRunnerError(
    'workspace_failed',
    `The replay of the worker's commits was cut after ${done} of ${total} (interrupted, or the task ran out of time).`,
  );
}

/**
 * Moves the task branch to `headSha` when that is a fast-forward: with the person's worktree when it has the
 * branch checked out, else the ref alone. Returns whether it moved; records in `result` why not.
 */
async function moveBranch(
  repoRoot: string,
  layout: TaskLayout,
  branchHead: string,
  headSha: string,
  result: SyncBackResult,
): Promise<boolean> {
  let moved = false;
  if (await isAncestor(repoRoot, branchHead, headSha)) {
    const worktreeOnBranch =
      existsSync(layout.worktreePath) &&
      (await tryGit(['symbolic-ref', '-q', 'HEAD'], { cwd: layout.worktreePath })).stdout.trim() ===
        layout.branchRef;
    if (worktreeOnBranch) {
      // Moves the branch and the files together; refuses when the person's edits would be overwritten. The
      // files are the worker's: git-command's settings keep every filter, hook and link of theirs inert.
      const merged = await tryGit(['merge', '--ff-only', '-q', headSha], { cwd: layout.worktreePath });
      moved = merged.exitCode === 0;
      result.worktreeUpdated = moved;
      if (!moved) {
        result.pendingReason = 'worktree_conflict';
        result.pendingDetail = merged.stderr;
      }
    } else {
      const updated = await tryGit(
        ['update-ref', '-m', 'agent-runner: sync', layout.branchRef, headSha, branchHead],
        {
          cwd: repoRoot,
        },
      );
      moved = updated.exitCode === 0;
      if (!moved) {
        result.pendingReason = 'not_fast_forward';
        result.pendingDetail = updated.stderr;
      }
    }
  } else {
    result.pendingReason = 'not_fast_forward';
  }
  return moved;
}

/**
 * Fetches and replays the worker's new commits, then moves the task branch (and the person's worktree, by a
 * fast-forward merge) to them. Safe to call again: commit-map.json makes it incremental and idempotent.
 */
export async function syncBack(options: SyncBackOptions): Promise<SyncBackResult> {
  const { repoRoot, taskId } = options;
  const layout = taskLayout(repoRoot, taskId);
  const scope = compileScope(options.scope);
  const state = await readWorkspaceState(layout.workspaceStatePath);
  const branchHead = await resolveCommit(repoRoot, layout.branchRef);
  if (state === null || branchHead === null) {
    throw new AgentRunnerError(
      'workspace_failed',
      `Task ${taskId} has no prepared workspace in ${repoRoot}; prepare it first (prepareTaskWorkspace).`,
    );
  }
  const unchanged = (problem: string | null): SyncBackResult => ({
    sandboxHeadSha: null,
    headSha: branchHead,
    branchHeadSha: branchHead,
    commits: [],
    pendingRef: null,
    pendingReason: null,
    pendingDetail: null,
    worktreeUpdated: false,
    problem,
    capped: null,
  });

  const fetched = await fetchFromSandbox({
    repoRoot,
    taskId,
    sourceRef: `refs/heads/${layout.branch}`,
    targetRef: layout.sandboxRef,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (fetched.problem !== null) return unchanged(fetched.problem);
  const sandboxHead = (await git(['rev-parse', layout.sandboxRef], { cwd: repoRoot })).trim();

  const commitMap = await readCommitMap(layout.commitMapPath);
  const toReplay = await commitsToReplay(repoRoot, sandboxHead, commitMap);
  // Before any commit is made, any ref moved or any file checked out: over a bound, nothing is brought over.
  const capped = await replayCapOver(
    repoRoot,
    sandboxHead,
    toReplay.length,
    options.caps ?? DEFAULT_REPLAY_CAPS,
    options.signal,
  );
  if (capped !== null) return { ...unchanged(null), sandboxHeadSha: sandboxHead, capped };
  const commits = await replayCommits(repoRoot, toReplay, commitMap, scope, state.snapshotOf, options.signal);
  if (commits.length > 0) await writeJsonAtomic(layout.commitMapPath, commitMap);

  const headSha = commitMap.map[sandboxHead];
  if (headSha === undefined)
    throw new AgentRunnerError('workspace_failed', `Sandbox head ${sandboxHead} has no replayed commit.`);
  const result: SyncBackResult = {
    sandboxHeadSha: sandboxHead,
    headSha,
    branchHeadSha: branchHead,
    commits,
    pendingRef: null,
    pendingReason: null,
    pendingDetail: null,
    worktreeUpdated: false,
    problem: null,
    capped: null,
  };
  if (headSha === branchHead) {
    await tryGit(['update-ref', '-d', layout.pendingRef], { cwd: repoRoot });
    return result;
  }

  const moved = await moveBranch(repoRoot, layout, branchHead, headSha, result);

  if (moved) {
    result.branchHeadSha = headSha;
    await tryGit(['update-ref', '-d', layout.pendingRef], { cwd: repoRoot });
  } else {
    await git(['update-ref', '-m', 'agent-runner: pending', layout.pendingRef, headSha], { cwd: repoRoot });
    result.pendingRef = layout.pendingRef;
  }
  return result;
}
