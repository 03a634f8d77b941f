/**
 * Live progress of a project: one line per subtask (its state and what it is doing), redrawn in place on a
 * terminal; elsewhere one line per change, each with the subtask's id. Project-wide news (a merge, the
 * combined DoD, a review) is printed above the subtask lines. A run that was not split gets the task's
 * ordinary progress. The redraw's cursor moves are coded moves handed to the writer, never text: what a
 * subtask is doing (a worker's command) is data and cannot move the cursor.
 */
import { formatDuration } from '../config/units.js';
import type { StampedEvent } from '../core/events.js';
import type { RedrawPiece } from '../notes/terminal-text.js';
import type { StampedProjectEvent, SubtaskTaskEvent } from './project-events.js';
import { combinedLine } from './combined-check.js';

/** Where project progress goes (the CLI's safe output): whole lines, and the redraw of the subtask lines. */
export interface ProgressWriter {
  err(text: string): void;
  redraw(pieces: readonly RedrawPiece[]): void;
}

const clip = (text: string, max = 100) => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/** Prints project events; passes a single task's events to `single` (the task's own printer). */
export function createProjectProgress(
  write: ProgressWriter,
  options: { tty: boolean; single: (event: StampedEvent) => void },
): (event: StampedProjectEvent) => void {
  const order: string[] = [];
  const state = new Map<string, string>();
  const activity = new Map<string, string>();
  let drawn = 0;
  let split = false;

  const lineOf = (id: string) =>
    `  ${id.padEnd(14)} ${(state.get(id) ?? 'waiting').padEnd(10)} ${clip(activity.get(id) ?? '')}`;
  const redraw = () => {
    if (!options.tty || order.length === 0) return;
    const pieces: RedrawPiece[] = drawn > 0 ? [{ kind: 'up', lines: drawn }] : [];
    order.forEach((id, index) =>
      pieces.push(...(index > 0 ? ['\n'] : []), { kind: 'clear_line' }, lineOf(id)),
    );
    write.redraw(pieces);
    drawn = order.length;
  };
  const news = (text: string) => {
    if (options.tty && drawn > 0) {
      write.redraw([{ kind: 'up', lines: drawn }, { kind: 'clear_below' }, text]);
      drawn = 0;
      redraw();
    } else write.err(text);
  };
  const update = (id: string, what: { state?: string; activity?: string }) => {
    if (!order.includes(id)) order.push(id);
    if (what.state) state.set(id, what.state);
    if (what.activity !== undefined) activity.set(id, what.activity);
    if (options.tty) redraw();
    else write.err(lineOf(id).trimEnd());
  };

  return (event) => {
    if (
      !split &&
      event.type !== 'project_started' &&
      event.type !== 'project_plan' &&
      !('subtask' in event)
    ) {
      options.single(event as unknown as StampedEvent);
      return;
    }
    if (event.type === 'project_plan' && event.split) split = true;
    if (event.type === 'project_started') split = true;
    const text = newsOf(event);
    if (text !== null) news(text);
    if (event.type === 'project_started')
      for (const subtask of event.subtasks) update(subtask.id, { state: 'waiting', activity: subtask.title });
    const change = subtaskChange(event);
    if (change) update(change.id, change);
  };
}

/** The line a project-wide event prints above the subtask lines, if any. */
function newsOf(event: StampedProjectEvent): string | null {
  switch (event.type) {
    case 'project_started':
      return `project ${event.taskId}: ${event.subtasks.length} subtasks on ${event.branch} (base ${event.baseSha.slice(0, 10)}), at most ${event.max} at once`;
    case 'review':
      return `review of ${event.subtask}: ${event.review.verdict} — ${clip(event.review.summary)}`;
    case 'replan':
      return `${event.subtask} planned again (attempt ${event.attempt}): ${clip(event.reason)}`;
    case 'merge':
      return `merge ${event.branch}: ${event.status} (${event.sha.slice(0, 10)})`;
    case 'combined_dod':
      return `combined check after ${event.subtask} on ${event.headSha.slice(0, 10)}: ${combinedLine(event)}`;
    case 'fixup':
      return `fix-up ${event.taskId} for ${event.subtask}: ${event.state} — ${clip(event.reason)}`;
    default:
      return null;
  }
}

/** What an event changes in its subtask's line (its state, what it is doing), if anything. */
function subtaskChange(event: StampedProjectEvent): { id: string; state?: string; activity?: string } | null {
  switch (event.type) {
    case 'subtask_state':
      return { id: event.subtask, state: event.state, activity: event.reason ?? '' };
    case 'subtask_waiting':
      return { id: event.subtask, activity: event.reason };
    case 'subtask_finished':
      return { id: event.subtask, activity: `${event.summary.state}: ${event.summary.reason}` };
    case 'project_started':
    case 'project_plan':
    case 'review':
    case 'replan':
    case 'merge':
    case 'combined_dod':
    case 'fixup':
    case 'project_note_written':
    case 'project_finished':
      return null;
    default:
      return 'subtask' in event ? taskActivity(event) : null;
  }
}

/** What a subtask's own task event says it is doing. */
function taskActivity(event: SubtaskTaskEvent): { id: string; activity: string } | null {
  const id = event.subtask;
  if (event.type === 'worker_started') return { id, activity: `worker run ${event.run}` };
  if (event.type === 'worker_event' && event.event.kind === 'command_started')
    return { id, activity: `$ ${event.event.command}` };
  if (event.type === 'worker_finished')
    return {
      id,
      activity: `worker run ${event.run} ended: exit ${event.exitCode} after ${formatDuration(event.durationMs)}`,
    };
  if (event.type === 'dod') return { id, activity: `DoD ${event.dod.status}` };
  if (event.type === 'transition' && event.to !== 'RUNNING') return { id, activity: event.to };
  return null;
}
