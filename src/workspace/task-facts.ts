/**
 * Observable facts after a worker run: what the task branch holds (from host git on the user's repository,
 * which the worker cannot touch), what is left uncommitted in the sandbox (from git inside it), scope
 * violations, DoD results and the worker's exit. These decide completion, not the worker's words.
 */
import type { SandboxRuntime } from '../core/ports.js';
import { git, splitNul } from './git/git-command.js';
import { STATE_DIR_NAME, taskLayout } from './layout.js';
import type { DodResult } from './checks/dod-checks.js';
import { dodIsEvidenceOfDone } from './checks/dod-checks.js';
import {
  SANDBOX_GIT_TIMEOUT_MS,
  sandboxGit,
  sandboxIgnoredFiles,
  sandboxStatus,
  type UncommittedChange,
} from './sandbox-repo/sandbox-git.js';
import { compileScope, type PathAccess, type Scope, type ScopeMatcher } from './scope/scope.js';
import type { SyncBackResult } from './sandbox-repo/sync-back.js';
import { readCommitMap } from './workspace-state.js';

/** How the worker's run ended; passed in by the caller (from WorkerRunResult). */
export interface WorkerOutcome {
  exitCode: number;
  signal: string | null;
  timedOut: boolean;
  interrupted?: boolean;
}

export interface ChangedFile {
  path: string;
  /** A (added), M (modified), D (deleted), T (type changed). */
  status: string;
  /** Null for binary files. */
  insertions: number | null;
  deletions: number | null;
}

export interface ScopeViolation {
  path: string;
  /**
   * Why the path may not change: the runner's own (`.agent-runner/`), excluded from the sandbox, read-only, or
   * not matched by `write`.
   */
  access: Exclude<PathAccess, 'write'>;
  /** Committed (on the task branch) or left uncommitted in the sandbox. */
  where: 'committed' | 'uncommitted';
}

/**
 * What the workspace observes in detail (objects, line counts, DoD results). The core's one `TaskFacts` is
 * made from it once, in `GitTaskWorkspace.observe`; nothing else maps between the two.
 */
export interface WorkspaceObservation {
  collectedAt: string;
  branch: string;
  baseSha: string;
  /** Real commit id of the worker's head (the task branch, or the pending ref when it could not move). */
  headSha: string;
  branchHeadSha: string;
  pendingRef: string | null;
  /** Why the worker's head is not on the branch, in words (git's message short and sanitised); null when it is. */
  pendingReason: string | null;
  commits: { count: number; list: { sha: string; subject: string }[] };
  /** The sandbox working tree has uncommitted changes (untracked files included, ignored ones not). */
  dirty: boolean;
  uncommittedFiles: UncommittedChange[];
  /** Committed changes base..head, with line counts. */
  changedFiles: ChangedFile[];
  diffStat: { files: number; insertions: number; deletions: number };
  /** Uncommitted tracked changes against the sandbox HEAD (reported by git inside the sandbox). */
  uncommittedDiffStat: { files: number; insertions: number; deletions: number };
  scopeViolations: ScopeViolation[];
  dod: DodResult[];
  /** All DoD checks passed on a clean tree. */
  dodPassed: boolean;
  worker: WorkerOutcome | null;
  /** Things that made facts incomplete (sync or sandbox git problems), in words. */
  problems: string[];
}

export interface CollectFactsOptions {
  repoRoot: string;
  taskId: string;
  branch: string;
  baseSha: string;
  scope: Scope;
  sync: SyncBackResult;
  dod?: DodResult[];
  worker?: WorkerOutcome | null;
  /** Ctrl-C, SIGTERM, the wall clock: the git calls in the sandbox stop (a cut call is an incomplete fact). */
  signal?: AbortSignal;
}

/** Characters of git's message the facts keep. */
const GIT_MESSAGE_CHARS = 160;
/** Characters kept of a run without spaces (a worker's file name can be hundreds of bytes long). */
const WORD_CHARS = 40;

/**
 * git's message in a few words, safe to show anywhere: its first line, each long run without spaces (a quoted
 * file name) cut, control and format characters (escape sequences, bidi overrides) and backticks replaced,
 * the whole bounded. Its text may be the worker's (the names of its files).
 */
export function shortGitMessage(stderr: string): string {
  const line =
    stderr
      .split('\n')
      .map((item) => item.trim())
      .find((item) => item.length > 0) ?? '';
  const clean = line
    .replace(/\s+/g, ' ')
    .replace(/[\p{Cc}\p{Cf}`]/gu, '?')
    .replace(new RegExp(`\\S{${WORD_CHARS + 1},}`, 'gu'), (word) => cut(word, WORD_CHARS));
  return cut(clean, GIT_MESSAGE_CHARS);
}

/** `text` cut to `max` characters (code points, so no pair is split), with an ellipsis when cut. */
function cut(text: string, max: number): string {
  const characters = Array.from(text);
  return characters.length > max ? `${characters.slice(0, max - 1).join('')}…` : text;
}

/** Why the worker's head could not be put on the task branch, in words; null when it is there. */
export function pendingReasonWords(sync: SyncBackResult, worktreePath: string): string | null {
  if (sync.pendingRef === null) return null;
  const message = sync.pendingDetail ? shortGitMessage(sync.pendingDetail) : '';
  const said = message ? ` (git: ${message})` : '';
  return sync.pendingReason === 'worktree_conflict'
    ? `the worktree ${worktreePath} could not be updated to it${said}`
    : `it is not a fast-forward of the task branch: the worker rewrote its history, or the branch moved on${said}`;
}

async function committedChanges(
  repoRoot: string,
  baseSha: string,
  headSha: string,
  signal?: AbortSignal,
): Promise<ChangedFile[]> {
  const host = { cwd: repoRoot, ...(signal ? { signal } : {}) };
  const names = splitNul(await git(['diff', '--name-status', '-z', '--no-renames', baseSha, headSha], host));
  const status = new Map<string, string>();
  for (let index = 0; index + 1 < names.length; index += 2)
    status.set(names[index + 1] as string, names[index] as string);
  const numstat = splitNul(await git(['diff', '--numstat', '-z', '--no-renames', baseSha, headSha], host));
  return numstat.map((line) => {
    const [insertions = '-', deletions = '-', ...rest] = line.split('\t');
    const file = rest.join('\t');
    return {
      path: file,
      status: status.get(file) ?? 'M',
      insertions: insertions === '-' ? null : Number(insertions),
      deletions: deletions === '-' ? null : Number(deletions),
    };
  });
}

function sumStat(files: { insertions: number | null; deletions: number | null }[]) {
  return {
    files: files.length,
    insertions: files.reduce((sum, file) => sum + (file.insertions ?? 0), 0),
    deletions: files.reduce((sum, file) => sum + (file.deletions ?? 0), 0),
  };
}

/** Line counts of the sandbox's uncommitted tracked changes against its HEAD (none when git fails there). */
async function uncommittedNumstat(
  runtime: SandboxRuntime,
  sandboxId: string,
  signal?: AbortSignal,
): Promise<{ insertions: number | null; deletions: number | null }[]> {
  const numstat = await sandboxGit(
    runtime,
    sandboxId,
    ['diff', '--numstat', '-z', '--no-renames', '--no-ext-diff', '--no-textconv', 'HEAD'],
    { timeoutMs: SANDBOX_GIT_TIMEOUT_MS, signal },
  );
  if (numstat.exitCode !== 0) return [];
  return splitNul(numstat.stdoutTail).map((line) => {
    const [insertions = '-', deletions = '-'] = line.split('\t');
    return {
      insertions: insertions === '-' ? null : Number(insertions),
      deletions: deletions === '-' ? null : Number(deletions),
    };
  });
}

/** The paths the worker changed, by where they were seen. */
export interface ChangedPaths {
  /** On the task branch (base..head), and the kept paths the replay put back (commit-map.json). */
  committed: readonly string[];
  /** In the sandbox's working tree: `git status`, and ignored files under `.agent-runner/`. */
  uncommitted: readonly string[];
}

/** The scope violations among the changed paths: each path once per where, committed ones first. */
export function scopeViolationsOf(changed: ChangedPaths, scope: ScopeMatcher): ScopeViolation[] {
  const violations: ScopeViolation[] = [];
  const seen = new Set<string>();
  const add = (path: string, where: ScopeViolation['where']) => {
    const access = scope.access(path);
    if (access === 'write' || seen.has(`${where}:${path}`)) return;
    seen.add(`${where}:${path}`);
    violations.push({ path, access, where });
  };
  for (const path of changed.committed) add(path, 'committed');
  for (const path of changed.uncommitted) add(path, 'uncommitted');
  return violations;
}

/**
 * Gathers the facts. Call after `syncBack` (it describes the synced head) and pass the DoD results of the
 * same run; `runDodChecks` records on its own whether the tree was dirty.
 */
export async function collectFacts(
  runtime: SandboxRuntime,
  sandboxId: string,
  options: CollectFactsOptions,
): Promise<WorkspaceObservation> {
  const { repoRoot, baseSha, sync } = options;
  const scope = compileScope(options.scope);
  const problems: string[] = sync.problem ? [sync.problem] : [];
  const headSha = sync.headSha;

  const log = await git(['log', '--format=%H%x00%s%x00', '--topo-order', `${baseSha}..${headSha}`], {
    cwd: repoRoot,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const parts = log.split('\0');
  const list: { sha: string; subject: string }[] = [];
  for (let index = 0; index + 1 < parts.length; index += 2) {
    list.push({ sha: (parts[index] as string).trim(), subject: parts[index + 1] as string });
  }
  const changedFiles = await committedChanges(repoRoot, baseSha, headSha, options.signal);

  const [status, ignoredRunnerFiles, uncommittedNumbers] = await Promise.all([
    sandboxStatus(runtime, sandboxId, options.signal),
    // A repository that ignores `.agent-runner/` hides what the worker writes there from the status above.
    sandboxIgnoredFiles(runtime, sandboxId, STATE_DIR_NAME, options.signal),
    uncommittedNumstat(runtime, sandboxId, options.signal),
  ]);
  if (status.error) problems.push(status.error);
  if (ignoredRunnerFiles.error) problems.push(ignoredRunnerFiles.error);
  const commitMap = await readCommitMap(taskLayout(repoRoot, options.taskId).commitMapPath);
  const violations = scopeViolationsOf(
    {
      committed: [
        ...changedFiles.map((file) => file.path),
        ...list.flatMap((commit) => commitMap.excludedTouched[commit.sha] ?? []),
      ],
      uncommitted: [...status.changes.map((change) => change.path), ...ignoredRunnerFiles.paths],
    },
    scope,
  );

  const dod = options.dod ?? [];
  return {
    collectedAt: new Date().toISOString(),
    branch: options.branch,
    baseSha,
    headSha,
    branchHeadSha: sync.branchHeadSha,
    pendingRef: sync.pendingRef,
    pendingReason: pendingReasonWords(sync, taskLayout(repoRoot, options.taskId).worktreePath),
    commits: { count: list.length, list },
    dirty: status.error !== null || status.changes.length > 0,
    uncommittedFiles: status.changes,
    changedFiles,
    diffStat: sumStat(changedFiles),
    uncommittedDiffStat: sumStat(uncommittedNumbers),
    scopeViolations: violations,
    dod,
    dodPassed: dodIsEvidenceOfDone(dod),
    worker: options.worker ?? null,
    problems,
  };
}
