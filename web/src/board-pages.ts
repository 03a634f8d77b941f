/**
 * The board's pages: `GET /api/tasks` a page at a time (the server's `next` cursor), filtered by state and node.
 * The board shows the pages it has loaded and asks for them all again on each refresh (the first page holds
 * what was created since; a later one what changed in it); "More" adds the next page.
 */
import type { FleetTaskRow } from '../../src/control/fleet-tasks.js';
import type { BoardTask } from '../../src/serve/board-view.js';

/** Tasks a page of the board holds. */
export const BOARD_PAGE = 50;

/** What `GET /api/tasks` answers: `fleet` on a node of a fleet only (null while its database is away). */
export interface TaskList {
  tasks: BoardTask[];
  fleet?: FleetTaskRow[] | null;
  next: string | null;
  more: boolean;
}

export interface BoardFilters {
  /** A task state (upper case); empty: every state. */
  state: string;
  /** A node's id of a fleet; empty: every node. */
  node: string;
}

/** The first `pages` pages of the board, one after another, joined (fewer when the list ends sooner). */
export async function loadPages(
  api: <T>(method: string, route: string) => Promise<T>,
  filters: BoardFilters,
  pages: number,
): Promise<TaskList> {
  const query = new URLSearchParams({ limit: String(BOARD_PAGE) });
  if (filters.state !== '') query.set('state', filters.state);
  if (filters.node !== '') query.set('node', filters.node);
  const joined: TaskList = { tasks: [], next: null, more: false };
  for (let page = 0; page < pages; page += 1) {
    const list = await api<TaskList>('GET', `/api/tasks?${query.toString()}`);
    joined.tasks.push(...list.tasks);
    if (list.fleet !== undefined)
      joined.fleet =
        list.fleet === null || joined.fleet === null ? null : [...(joined.fleet ?? []), ...list.fleet];
    joined.next = list.next;
    joined.more = list.more;
    if (list.next === null) break;
    query.set('cursor', list.next);
  }
  return joined;
}
