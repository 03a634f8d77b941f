/**
 * Where a task's workspace lives on the host, and the names of the refs the runner owns. One place, so the
 * docs (docs/isolation.md), the code and the tests agree.
 */
import path from 'node:path';
import { isValidTaskId, TASK_ID_RULE } from '../core/task-id.js';
import { UserError } from '../errors.js';

/** Container path where the sandbox repository is mounted. */
export const SANDBOX_WORKDIR = '/workspace';

/** agent-runner's own directory at the repository's root: notes, journals, worktrees, sandboxes. */
export const STATE_DIR_NAME = '.agent-runner';

export interface TaskLayout {
  taskId: string;
  /** `agent-runner/<TASK-ID>` (short name). */
  branch: string;
  branchRef: string;
  /** Root commit of the sandbox repository: the base tree minus excluded paths. */
  snapshotRef: string;
  /** The worker's branch as fetched from the sandbox (sandbox commit ids). */
  sandboxRef: string;
  /** Replayed commits that could not be moved onto the branch (the person edited the worktree). */
  pendingRef: string;
  stateDir: string;
  worktreePath: string;
  sandboxDir: string;
  sandboxRepoPath: string;
  runDir: string;
  workspaceStatePath: string;
  commitMapPath: string;
}

/** Task ids become path and ref components: checked by the one task-id rule (src/core/task-id.ts). */
export function assertValidTaskId(taskId: string): void {
  if (!isValidTaskId(taskId)) {
    throw new UserError('usage', `Invalid task id ${JSON.stringify(taskId)}: use ${TASK_ID_RULE}.`);
  }
}

/** The ref a task's uncommitted work is saved under at the end of a run (pushed with the branch by a fleet node). */
export function wipRef(taskId: string): string {
  return `refs/agent-runner/wip/${taskId}`;
}

/** The layout of one task inside `<repoRoot>/.agent-runner/`. */
export function taskLayout(repoRoot: string, taskId: string): TaskLayout {
  assertValidTaskId(taskId);
  const stateDir = path.join(repoRoot, STATE_DIR_NAME);
  const sandboxDir = path.join(stateDir, 'sandboxes', taskId);
  const runDir = path.join(stateDir, 'runs', taskId);
  return {
    taskId,
    branch: `agent-runner/${taskId}`,
    branchRef: `refs/heads/agent-runner/${taskId}`,
    snapshotRef: `refs/agent-runner/snapshots/${taskId}`,
    sandboxRef: `refs/agent-runner/sandbox/${taskId}`,
    pendingRef: `refs/agent-runner/pending/${taskId}`,
    stateDir,
    worktreePath: path.join(stateDir, 'worktrees', taskId),
    sandboxDir,
    sandboxRepoPath: path.join(sandboxDir, 'repo'),
    runDir,
    workspaceStatePath: path.join(runDir, 'workspace.json'),
    commitMapPath: path.join(runDir, 'commit-map.json'),
  };
}

/**
 * Environment for every process in the sandbox: `safe.directory` through GIT_CONFIG_* (command-line scope,
 * which git honours for it) because /workspace belongs to the guard uid when some paths are read-only.
 */
export function sandboxGitEnvironment(): Record<string, string> {
  return { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.directory', GIT_CONFIG_VALUE_0: SANDBOX_WORKDIR };
}
