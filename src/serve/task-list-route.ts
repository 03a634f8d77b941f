/**
 * `GET /api/tasks`: a page of the board (task-list-query.ts says the parameters), newest first, with `next`
 * (the cursor of the page after, null at the end) and `more` (whether there is one). On a node of a fleet the
 * page of the fleet's tasks from the control database comes with it as `fleet` (null while the database is
 * away: this node's own tasks are still listed, and the cursor keeps the fleet's place for the next try).
 */
import type { Redaction } from '../notes/redact.js';
import type { FleetListQuery } from '../control/fleet-tasks.js';
import { apiError } from './api-answers.js';
import { route, type ApiApp, type AuditSinks } from './api-auth.js';
import type { TaskBoard } from './task-board.js';
import { encodeCursor, ListQueryError, parseListQuery, type ListKey } from './task-list-query.js';

/** A page of the fleet's tasks (a node of a fleet): `listFleetTasks` on the control database. */
export type FleetTaskList = (query: FleetListQuery) => Promise<{ tasks: unknown[]; next: ListKey | 'end' }>;

export function registerTaskList(
  app: ApiApp,
  board: TaskBoard,
  options: { redaction: Redaction; sinks: AuditSinks; fleetTasks?: FleetTaskList | undefined },
): void {
  route(app, 'GET /api/tasks', options.sinks, async (c) => {
    let query;
    try {
      query = parseListQuery((name) => c.req.queries(name));
    } catch (error) {
      if (!(error instanceof ListQueryError)) throw error;
      return apiError(c, 400, 'invalid_field', error.message, error.field);
    }
    const page = await board.page(query);
    const { fleetTasks } = options;
    if (fleetTasks === undefined) {
      const next = encodeCursor({ tasks: page.next });
      return c.json(options.redaction.value({ tasks: page.tasks, next, more: next !== null }));
    }
    const after = query.cursor.fleet;
    const fleet =
      after === 'end'
        ? { tasks: [], next: 'end' as const }
        : await fleetTasks({
            limit: query.limit,
            states: query.states,
            nodes: query.nodes,
            ...(after !== undefined ? { after } : {}),
          }).catch(() => null);
    const next = encodeCursor({
      tasks: page.next,
      ...(fleet !== null ? { fleet: fleet.next } : after !== undefined ? { fleet: after } : {}),
    });
    return c.json(
      options.redaction.value({ tasks: page.tasks, fleet: fleet?.tasks ?? null, next, more: next !== null }),
    );
  });
}
