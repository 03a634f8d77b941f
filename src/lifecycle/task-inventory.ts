/**
 * The tasks of a repository as `status` and `gc` see them: from the run directories (journal, lock), the
 * worktrees and the labelled containers. A task is `running` while a live process holds its lock, `stale`
 * when its last attempt never ended (the runner died: resume it), `finished` when it ended.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { SandboxRuntime } from '../core/ports.js';
import type { TaskState } from '../core/task-state.js';
import { taskLayout } from '../workspace/layout.js';
import { listLabelledSandboxes, type LabelledSandbox } from './orphan-sandboxes.js';
import type { Liveness } from './process-liveness.js';
import type { JournalTailCache } from './journal-tail-cache.js';
import { readTaskJournal, type JournalTaskState } from './task-journal-state.js';
import { JournalInvalidError } from '../notes/event-journal.js';
import { notStartedReason } from './never-started.js';
import { inspectTaskLock, type LockHolder } from './task-lock.js';
import { readProjectJournal, type ProjectResume } from '../parallel/project-journal.js';
import type { SubtaskState } from '../parallel/scheduler.js';

/**
 * `never_started`: a run directory with no task in it (a `plan`'s logs, or a runner that died before its
 * task started): nothing to resume, `gc` removes it.
 */
export type TaskStatus = 'running' | 'stale' | 'finished' | 'unknown' | 'never_started';

export interface TaskEntry {
  taskId: string;
  status: TaskStatus;
  /** The state the task reached (terminal when finished). */
  state: TaskState | null;
  reason: string | null;
  lock: { holder: LockHolder; liveness: Liveness } | null;
  /** When the task was created: its journal's (a project's: its project journal's) first event. */
  createdAt: string | null;
  lastEventAt: string | null;
  branch: string;
  worktreePath: string | null;
  sandboxRepoPath: string | null;
  containers: LabelledSandbox[];
  journal: JournalTaskState | null;
  /**
   * A PRD split into subtasks (its run directory holds `project.jsonl`): each subtask's state and the task id
   * of its last attempt, which is listed as a task of its own. Null for a task that was not split.
   */
  project?: {
    subtasks: { id: string; title: string; state: SubtaskState; taskId: string; blockedBy: string[] }[];
  } | null;
  /** A project's subtask (or its combined-DoD check): the project's task id. */
  parent?: string | null;
}

/** How the inventory reads journals: `journals` (a server's cache) reads an unchanged one once. */
export interface InventoryOptions {
  journals?: JournalTailCache;
}

function subdirectories(directory: string): string[] {
  try {
    return readdirSync(directory, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return [];
  }
}

function statusOf(entry: Pick<TaskEntry, 'lock' | 'journal'>, project: ProjectResume | null): TaskStatus {
  if (entry.lock?.liveness === 'alive') return 'running';
  if (entry.lock?.liveness === 'unknown') return 'unknown';
  // A project keeps no task journal: its own journal says whether it ended.
  if (project) return project.finished ? 'finished' : 'stale';
  // No task ever started here (a damaged journal is no such case: it stays `unknown` with its damage).
  if (entry.journal === null || entry.journal.attempts === 0) return 'never_started';
  return entry.journal.finished ? 'finished' : 'stale';
}

/**
 * Every task of `repoRoot`. `runtime` adds the containers (labelled with this repository); without it, or
 * when the engine does not answer, `containers` is empty and `dockerError` says why.
 */
export async function listTasks(
  repoRoot: string,
  runtime?: SandboxRuntime,
  options: InventoryOptions = {},
): Promise<{ tasks: TaskEntry[]; dockerError: string | null }> {
  const stateDir = path.join(repoRoot, '.agent-runner');
  let containers: LabelledSandbox[] = [];
  let dockerError: string | null = null;
  if (runtime) {
    try {
      containers = await listLabelledSandboxes(runtime, { repoRoot });
    } catch (error) {
      dockerError = (error as Error).message;
    }
  }
  const ids = new Set([
    ...subdirectories(path.join(stateDir, 'runs')),
    ...subdirectories(path.join(stateDir, 'worktrees')),
    ...containers.map((container) => container.taskId),
  ]);
  const tasks: TaskEntry[] = [];
  for (const taskId of [...ids].sort()) {
    const entry = taskEntry(repoRoot, taskId, containers, options);
    if (entry) tasks.push(entry);
  }
  // A subtask's attempts and the fix-ups (`<ID>--<SUB>`, `<ID>--<SUB>-r2`, `<ID>--fixup-N`); the integration
  // sandbox (`<ID>--integration`) and a combined check (`<ID>--check-N`) remove their run folders, but one cut
  // short by a crash is the project's too.
  for (const parent of tasks.filter((task) => task.project)) {
    for (const task of tasks) if (task.taskId.startsWith(`${parent.taskId}--`)) task.parent ??= parent.taskId;
  }
  return { tasks, dockerError };
}

/** The entry of one task id (null when it is not a task directory of ours), its parent not looked up. */
function taskEntry(
  repoRoot: string,
  taskId: string,
  containers: LabelledSandbox[],
  options: InventoryOptions,
): TaskEntry | null {
  let layout;
  try {
    layout = taskLayout(repoRoot, taskId);
  } catch {
    return null; // not a task directory of ours
  }
  // A damaged journal still lists the task (unknown, with the damage as its reason); `resume` refuses it.
  let journal: JournalTaskState | null = null;
  let damage: string | null = null;
  try {
    journal = options.journals
      ? options.journals.read(layout.runDir, taskId)
      : readTaskJournal(layout.runDir, taskId);
  } catch (error) {
    if (!(error instanceof JournalInvalidError)) throw error;
    damage = `journal damaged at line ${error.line} ${error.problem}`;
  }
  const project = journal ? null : readProjectJournal(layout.runDir);
  const lock = inspectTaskLock(layout.runDir);
  const finished = journal?.finished ?? project?.finished ?? null;
  const status = damage ? 'unknown' : statusOf({ lock, journal }, project);
  return {
    taskId,
    status,
    state: finished?.state ?? journal?.lastState ?? (project ? 'RUNNING' : null),
    reason:
      finished?.reason ??
      damage ??
      (status === 'never_started' ? notStartedReason(layout.runDir, lock !== null) : null),
    lock,
    createdAt: journal?.firstEventAt ?? project?.firstEventAt ?? null,
    lastEventAt: journal?.lastEventAt ?? project?.lastEventAt ?? null,
    branch: journal?.branch ?? layout.branch,
    worktreePath: existsSync(layout.worktreePath) ? layout.worktreePath : null,
    sandboxRepoPath: existsSync(layout.sandboxDir) ? layout.sandboxDir : null,
    containers: containers.filter((container) => container.taskId === taskId),
    journal,
    project: project
      ? {
          subtasks: project.subtasks.map((subtask) => ({
            id: subtask.id,
            title: subtask.title,
            blockedBy: subtask.blockedBy,
            state: project.states[subtask.id]?.state ?? 'waiting',
            taskId: project.states[subtask.id]?.taskId ?? `${taskId}--${subtask.id}`,
          })),
        }
      : null,
    parent: null,
  };
}

/** Whether `taskId` has a run folder or a worktree in `repoRoot`: what `readTask` needs to find it, no file read. */
export function hasTaskFiles(repoRoot: string, taskId: string): boolean {
  const layout = taskLayout(repoRoot, taskId);
  return existsSync(layout.runDir) || existsSync(layout.worktreePath);
}

/**
 * One task of `repoRoot` as `listTasks` lists it (its parent included: the first id before a `--` that has a
 * project journal), reading only its own files; null when the repository has no such task. No containers.
 */
export function readTask(repoRoot: string, taskId: string, options: InventoryOptions = {}): TaskEntry | null {
  if (!hasTaskFiles(repoRoot, taskId)) return null;
  const entry = taskEntry(repoRoot, taskId, [], options);
  if (!entry) return null;
  const parts = taskId.split('--');
  for (let end = 1; end < parts.length && entry.parent === null; end += 1) {
    const candidate = parts.slice(0, end).join('--');
    let runDir: string;
    try {
      runDir = taskLayout(repoRoot, candidate).runDir;
    } catch {
      continue; // not a task id
    }
    if (readProjectJournal(runDir)) entry.parent = candidate;
  }
  return entry;
}
