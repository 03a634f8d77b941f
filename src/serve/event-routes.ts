/**
 * A task's journal as Server-Sent Events (`GET /api/tasks/{id}/events`): every line from the start, or after
 * `Last-Event-ID` (or `?after=`, for a client that cannot set the header), then live until the task ends. A
 * new client gets the whole journal, streamed: the reader holds one chunk at a time and waits for the client,
 * so a journal of 50,000 events starts sending at once and is never held in memory. Each event's id is a
 * position (event-position.ts): a resume opens the journal at that byte offset (a fleet task: the events
 * table's next seq), so it reads nothing it already sent, whatever the journal's length.
 */
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Redaction } from '../notes/redact.js';
import { apiError, named } from './api-answers.js';
import { route, type ApiApp, type ApiEnv, type AuditSinks } from './api-auth.js';
import {
  EventPositionError,
  formatEventPosition,
  parseEventPosition,
  type EventPosition,
} from './event-position.js';
import { journalLines, offsetProblem, type JournalLine } from './journal-follow.js';
import type { TaskBoard } from './task-board.js';
import type { TaskRequest, TaskRequestResult } from '../control/task-requests.js';

/** How often a followed task that this server does not run is asked whether it still runs. */
const LIVENESS_CHECK_MS = 1_000;

/** A task of the fleet that runs on another node: its row and its journal, from the control database. */
export interface FleetTaskSource {
  detail(taskId: string): Promise<{ state: string; exitCode: number | null } | null>;
  /** The task's lines after the line `afterLine` (its seq); each line's `position` is its seq. */
  lines(
    taskId: string,
    options: { afterLine: number; follow: boolean; signal: AbortSignal },
  ): AsyncIterable<JournalLine>;
  /** The task's last seq (0: no line yet): a resume past it is refused. */
  lastLine?(taskId: string): Promise<number>;
  /** Writes an answer or a stop for the node that runs the task (task-requests.ts). */
  request?(taskId: string, request: TaskRequest): Promise<TaskRequestResult>;
}

/** The resume point a client named, or the 400 that says what is wrong with it. */
function resumePoint(c: Context<ApiEnv>, taskId: string): { position: EventPosition | null } | Response {
  try {
    return { position: parseEventPosition(taskId, c.req.header('last-event-id') ?? c.req.query('after')) };
  } catch (error) {
    if (!(error instanceof EventPositionError)) throw error;
    return apiError(c, 400, 'invalid_field', error.message, 'Last-Event-ID');
  }
}

const refused = (c: Context<ApiEnv>, reason: string) =>
  apiError(c, 400, 'invalid_field', new EventPositionError(reason).message, 'Last-Event-ID');

export function registerEvents(
  app: ApiApp,
  board: TaskBoard,
  options: { redaction: Redaction; fleetTask?: FleetTaskSource; sinks: AuditSinks },
): void {
  const safe = <T>(value: T): T => options.redaction.value(value);
  route(app, 'GET /api/tasks/:id/events', options.sinks, async (c) => {
    const task = named(c);
    if ('answer' in task) return task.answer;
    const resume = resumePoint(c, task.taskId);
    if (resume instanceof Response) return resume;
    const { position } = resume;
    // Only this task's files are looked at (not every journal): a watcher costs the same in a busy repository.
    if (!board.exists(task.taskId)) {
      const fleet = options.fleetTask;
      if (fleet === undefined || (await fleet.detail(task.taskId)) === null)
        return apiError(c, 404, 'not_found', `No task ${task.taskId} in this repository.`);
      if (position?.kind === 'offset')
        return refused(
          c,
          "a position in another node's journal file (this node reads the task's lines from the database)",
        );
      const last = (await fleet.lastLine?.(task.taskId)) ?? Number.POSITIVE_INFINITY;
      if (position !== null && position.value > last)
        return refused(c, `the position is past the task's last line (${last})`);
      return fleetEvents(c, fleet, task.taskId, position?.value ?? 0, options.redaction);
    }
    const file = board.journalFile(task.taskId);
    if (position?.kind === 'offset') {
      const problem = await offsetProblem(file, position.value);
      if (problem !== null) return refused(c, problem);
    }
    let live = board.writing(task.taskId);
    let checkedAt = Date.now();
    const ended = () => {
      if (board.isServed(task.taskId)) return !board.isLive(task.taskId);
      if (Date.now() - checkedAt > LIVENESS_CHECK_MS) {
        checkedAt = Date.now();
        live = board.writing(task.taskId);
      }
      return !live;
    };
    return streamSSE(c, async (stream) => {
      const aborted = new AbortController();
      stream.onAbort(() => aborted.abort());
      for await (const line of journalLines(file, {
        // A line number (a position a fleet's node sent for this task): counted from the start.
        afterLine: position?.kind === 'line' ? position.value : 0,
        ...(position?.kind === 'offset' ? { fromOffset: position.value } : {}),
        follow: c.req.query('follow') !== '0',
        signal: aborted.signal,
        ended,
      }))
        await stream.writeSSE({
          id: formatEventPosition(task.taskId, 'offset', line.position),
          event: 'journal',
          data: options.redaction.redactJsonText(line.text),
        });
      if (!aborted.signal.aborted) {
        const last = await board.get(task.taskId);
        await stream.writeSSE({
          event: 'end',
          data: JSON.stringify(
            safe({ taskId: task.taskId, state: last?.state ?? null, exitCode: last?.exitCode ?? null }),
          ),
        });
      }
    });
  });
}

/** Another node's task as Server-Sent Events: the same events as a local task's stream, read from the database. */
function fleetEvents(
  c: Context<ApiEnv>,
  fleet: FleetTaskSource,
  taskId: string,
  after: number,
  redaction: Redaction,
): Response {
  return streamSSE(c, async (stream) => {
    const aborted = new AbortController();
    stream.onAbort(() => aborted.abort());
    for await (const line of fleet.lines(taskId, {
      afterLine: after,
      follow: c.req.query('follow') !== '0',
      signal: aborted.signal,
    }))
      await stream.writeSSE({
        id: formatEventPosition(taskId, 'line', line.position),
        event: 'journal',
        data: redaction.redactJsonText(line.text),
      });
    if (!aborted.signal.aborted) {
      const last = await fleet.detail(taskId).catch(() => null);
      await stream.writeSSE({
        event: 'end',
        data: JSON.stringify(
          redaction.value({ taskId, state: last?.state ?? null, exitCode: last?.exitCode ?? null }),
        ),
      });
    }
  });
}
