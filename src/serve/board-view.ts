/**
 * What the server says about a task: its board line (from the task inventory, the journals), what its page
 * shows beyond it, and what the server itself knows of a task it runs (its question, its end).
 */
import type { TaskSummary } from '../core/types.js';
import type { TaskEntry } from '../lifecycle/task-inventory.js';
import type { JournalTaskState } from '../lifecycle/task-journal-state.js';

/** What a task's page shows beyond its board line. */
export interface TaskDetail {
  plan: JournalTaskState['plan'];
  runRecords: JournalTaskState['runs'];
  summary: TaskSummary | null;
  /** Who started, answered, stopped or resumed it through a server (its journal's `audit` events). */
  audit: JournalTaskState['audit'];
  /** Its follow-ups, oldest first. */
  followups: JournalTaskState['followups'];
}

/** The detail of a task that has no journal yet. */
export const NO_DETAIL: TaskDetail = { plan: null, runRecords: [], summary: null, audit: [], followups: [] };

/** What `GET /api/tasks/{id}` answers for a task of this server: its line, its detail, the forge's address. */
export type TaskPage = BoardTask &
  TaskDetail & {
    /** The configured forge's web address: the page links an origin on this host only (null: none). */
    forgeWeb: string | null;
  };

/** A task this server runs. */
export interface RunningTask {
  startedAt: string;
  stop: AbortController;
  hurry: AbortController;
  question: { text: string; answer: (text: string | null) => void } | null;
  /** The summary, once it ended. */
  summary: TaskSummary | null;
  /** An error that ended it before it could write a summary (a bad base, an engine that is down). */
  error: string | null;
  /** Waiting for a slot (more tasks than `maxRunning` were started). */
  queued: boolean;
  done: Promise<void>;
}

/** What the API says about a task: the inventory's entry, plus what only the running server knows. */
export interface BoardTask {
  taskId: string;
  /** `queued`: started on this server, waiting for a free slot. */
  status: TaskEntry['status'] | 'queued';
  state: TaskEntry['state'];
  reason: string | null;
  title: string | null;
  branch: string;
  parent: string | null;
  /** A split PRD's subtasks: the graph (each one's `blockedBy`) and each one's state. */
  subtasks: NonNullable<TaskEntry['project']>['subtasks'];
  startedAt: string | null;
  /**
   * When the task was created (its journal's first event; a task still preparing: when this server started it):
   * the board's order, newest first, and the key of its cursor (task-list-query.ts).
   */
  createdAt: string | null;
  lastEventAt: string | null;
  elapsedMs: number | null;
  runs: number;
  metaCalls: number;
  tokens: number;
  costUsd: number;
  /** Run by this server (it can stop it, and answer its question). */
  served: boolean;
  question: string | null;
  exitCode: number | null;
  error: string | null;
}

/** A task's board line from its inventory entry, with what this server knows of it when it runs it. */
export function boardTask(entry: TaskEntry, served: RunningTask | undefined): BoardTask {
  const journal = entry.journal;
  const usage = (journal?.metaUsage.costUsd ?? 0) + (journal?.workerUsage.costUsd ?? 0);
  const tokens = [journal?.metaUsage, journal?.workerUsage].reduce(
    (sum, part) => sum + (part?.inputTokens ?? 0) + (part?.outputTokens ?? 0),
    0,
  );
  return {
    taskId: entry.taskId,
    status: entry.status,
    state: entry.state,
    reason: entry.reason,
    title: journal?.plan?.title ?? null,
    branch: entry.branch,
    parent: entry.parent ?? null,
    subtasks: entry.project?.subtasks ?? [],
    startedAt: served?.startedAt ?? null,
    createdAt: entry.createdAt ?? served?.startedAt ?? null,
    lastEventAt: entry.lastEventAt,
    elapsedMs: journal?.elapsedMs ?? null,
    runs: journal?.runs.length ?? 0,
    metaCalls: journal?.metaCalls ?? 0,
    tokens,
    costUsd: usage,
    served: served !== undefined,
    question: served?.question?.text ?? null,
    exitCode: served?.summary?.exitCode ?? journal?.finished?.exitCode ?? null,
    error: served?.error ?? null,
  };
}

/** A task this server started that has no journal yet (queued, or still preparing). */
export function preparingTask(taskId: string, task: RunningTask): BoardTask {
  return {
    taskId,
    status: task.queued ? 'queued' : task.error === null ? 'running' : 'finished',
    state: null,
    reason: task.error,
    title: null,
    branch: `agent-runner/${taskId}`,
    parent: null,
    subtasks: [],
    startedAt: task.startedAt,
    createdAt: task.startedAt,
    lastEventAt: null,
    elapsedMs: null,
    runs: 0,
    metaCalls: 0,
    tokens: 0,
    costUsd: 0,
    served: true,
    question: task.question?.text ?? null,
    exitCode: task.summary?.exitCode ?? (task.error === null ? null : 2),
    error: task.error,
  };
}

/** A task's page from its inventory entry (its journal), with what this server knows of it when it runs it. */
export function taskDetail(entry: TaskEntry, served: RunningTask | undefined): BoardTask & TaskDetail {
  const journal = entry.journal;
  return {
    ...boardTask(entry, served),
    plan: journal?.plan ?? null,
    runRecords: journal?.runs ?? [],
    audit: journal?.audit ?? [],
    followups: journal?.followups ?? [],
    summary: served?.summary ?? journal?.finished ?? null,
  };
}
