/**
 * What a client does to a task that exists: stop it, answer its question (here, or on the node of the fleet that
 * runs it), resume it, follow it up (an ended task continued on its branch with a person's instruction). Each
 * is an operator's route of the route table, audited like every change.
 */
import type { Context } from 'hono';
import type { FleetFollowup } from '../control/task-queue-options.js';
import type { TaskRequest } from '../control/task-requests.js';
import { apiError, body, named } from './api-answers.js';
import { remoteAddress, route, type ApiApp, type ApiEnv, type AuditSinks } from './api-auth.js';
import { answerSchema, followupSchema, resumeSchema } from './api-schemas.js';
import type { FleetTaskSource } from './http-api.js';
import type { TaskBoard } from './task-board.js';

/** Queues a follow-up of a task of the fleet (a node of `serve --control`). */
export type EnqueueFollowup = (taskId: string, followup: FleetFollowup) => Promise<unknown>;

/**
 * A stop or an answer for a task this server does not run but the fleet does: written for its node (202), 409
 * when it is queued or ended, null when the fleet has no such task (the local answer follows).
 */
async function fleetRequest(
  c: Context<ApiEnv>,
  fleet: FleetTaskSource | undefined,
  taskId: string,
  request: TaskRequest,
  sinks: AuditSinks,
): Promise<Response | null> {
  if (fleet?.request === undefined) return null;
  // Who asked goes with the request: the node that runs the task writes it into the task's journal.
  const node = sinks.node?.();
  const by = { actor: c.get('actor'), from: remoteAddress(c), ...(node !== undefined ? { node } : {}) };
  const result = await fleet.request(taskId, { ...request, by });
  if (!result.written)
    return result.reason === 'not_found'
      ? null
      : apiError(
          c,
          409,
          'not_running',
          result.state === 'QUEUED'
            ? `Task ${taskId} is queued: it runs on no node yet. Stop or answer it once a node has taken it.`
            : `Task ${taskId} has ended (${result.state}): it has no question waiting and nothing to stop.`,
        );
  return request.kind === 'stop'
    ? c.json({ taskId, stop: 'requested', node: result.nodeId }, 202)
    : c.json({ taskId, answered: true, node: result.nodeId }, 202);
}

/** What a client does to a task: stop it, resume it, answer its question (here, or on the node that runs it). */
export function registerTaskActions(
  app: ApiApp,
  board: TaskBoard,
  fleet: FleetTaskSource | undefined,
  sinks: AuditSinks,
  enqueueFollowup?: EnqueueFollowup,
): void {
  route(app, 'POST /api/tasks/:id/stop', sinks, async (c) => {
    const task = named(c);
    if ('answer' in task) return task.answer;
    if (!board.isServed(task.taskId)) {
      const requested = await fleetRequest(c, fleet, task.taskId, { kind: 'stop' }, sinks);
      if (requested !== null) return requested;
    }
    if ((await board.get(task.taskId)) === null)
      return apiError(c, 404, 'not_found', `No task ${task.taskId} in this repository.`);
    return c.json({ taskId: task.taskId, stop: board.stop(task.taskId) }, 202);
  });

  route(app, 'POST /api/tasks/:id/resume', sinks, async (c) => {
    const task = named(c);
    if ('answer' in task) return task.answer;
    const checked = await body(c, resumeSchema, {});
    if ('answer' in checked) return checked.answer;
    // The board answers an unknown task (404), and a pure node every resume (400 `repository_invalid`).
    const { config, modelScript } = checked.value;
    return c.json({ taskId: await board.resume(task.taskId, config ?? {}, modelScript) }, 202);
  });

  route(app, 'POST /api/tasks/:id/followup', sinks, async (c) => {
    const task = named(c);
    if ('answer' in task) return task.answer;
    const checked = await body(c, followupSchema);
    if ('answer' in checked) return checked.answer;
    // A node of a fleet: a task of the fleet (not of this node's repository) is queued; any node takes it.
    if (enqueueFollowup !== undefined && (await board.get(task.taskId)) === null) {
      const { message, pr } = checked.value;
      await enqueueFollowup(task.taskId, { message, ...(pr !== undefined ? { pr } : {}) });
      return c.json({ taskId: task.taskId, followup: true, queued: true }, 202);
    }
    // The board answers an unknown task (404), a running one (400), and a pure node every follow-up (400).
    return c.json({ taskId: await board.followup(task.taskId, checked.value), followup: true }, 202);
  });

  route(app, 'POST /api/tasks/:id/answer', sinks, async (c) => {
    const task = named(c);
    if ('answer' in task) return task.answer;
    const checked = await body(c, answerSchema);
    if ('answer' in checked) return checked.answer;
    if (!board.isServed(task.taskId)) {
      const requested = await fleetRequest(
        c,
        fleet,
        task.taskId,
        { kind: 'answer', text: checked.value.text },
        sinks,
      );
      if (requested !== null) return requested;
    }
    if ((await board.get(task.taskId)) === null)
      return apiError(c, 404, 'not_found', `No task ${task.taskId} in this repository.`);
    board.answer(task.taskId, checked.value.text);
    return c.json({ taskId: task.taskId, answered: true }, 202);
  });
}
