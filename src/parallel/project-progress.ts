/**
 * Live progress of a project: one line per subtask (its state and what it is doing), redrawn in place on a
 * terminal; elsewhere one line per change, each with the subtask's id. Project-wide news (a merge, the
 * combined DoD, a review) is printed above the subtask lines. A run that was not split gets the task's
 * ordinary progress.
 */
import { formatDuration } from '../config/units.js';
import type { StampedEvent } from '../core/events.js';
import type { StampedProjectEvent } from './project-events.js';

const clip = (text: string, max = 100) => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/** Prints project events; passes a single task's events to `single` (the task's own printer). */
export function createProjectProgress(
  write: (text: string) => void,
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
    const up = drawn > 0 ? `\x1b[${drawn}A` : '';
    write(`${up}${order.map((id) => `\x1b[2K${lineOf(id)}`).join('\n')}`);
    drawn = order.length;
  };
  const news = (text: string) => {
    if (options.tty && drawn > 0) {
      write(`\x1b[${drawn}A\x1b[J${text}`);
      drawn = 0;
      redraw();
    } else write(text);
  };
  const update = (id: string, what: { state?: string; activity?: string }) => {
    if (!order.includes(id)) order.push(id);
    if (what.state) state.set(id, what.state);
    if (what.activity !== undefined) activity.set(id, what.activity);
    if (options.tty) redraw();
    else write(lineOf(id).trimEnd());
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
    switch (event.type) {
      case 'project_plan':
        if (event.split) split = true;
        break;
      case 'project_started':
        split = true;
        news(
          `project ${event.taskId}: ${event.subtasks.length} subtasks on ${event.branch} (base ${event.baseSha.slice(0, 10)}), at most ${event.max} at once`,
        );
        for (const subtask of event.subtasks)
          update(subtask.id, { state: 'waiting', activity: subtask.title });
        break;
      case 'subtask_state':
        update(event.subtask, { state: event.state, activity: event.reason ?? '' });
        break;
      case 'subtask_waiting':
        update(event.subtask, { activity: event.reason });
        break;
      case 'review':
        news(`review of ${event.subtask}: ${event.review.verdict} — ${clip(event.review.summary)}`);
        break;
      case 'replan':
        news(`${event.subtask} planned again (attempt ${event.attempt}): ${clip(event.reason)}`);
        break;
      case 'merge':
        news(`merge ${event.branch}: ${event.status} (${event.sha.slice(0, 10)})`);
        break;
      case 'combined_dod':
        news(
          `combined DoD after ${event.subtask}: ${event.dod.status}${event.dod.results.length ? ` (${event.dod.results.map((result) => `${result.name} ${result.status}`).join(', ')})` : ''}`,
        );
        break;
      case 'fixup':
        news(`fix-up ${event.taskId} for ${event.subtask}: ${event.state} — ${clip(event.reason)}`);
        break;
      case 'project_finished':
        break;
      case 'subtask_finished':
        update(event.subtask, { activity: `${event.summary.state}: ${event.summary.reason}` });
        break;
      default: {
        if (!('subtask' in event)) break;
        const id = event.subtask;
        if (event.type === 'worker_started') update(id, { activity: `worker run ${event.run}` });
        else if (event.type === 'worker_event' && event.event.kind === 'command_started')
          update(id, { activity: `$ ${event.event.command}` });
        else if (event.type === 'worker_finished')
          update(id, {
            activity: `worker run ${event.run} ended: exit ${event.exitCode} after ${formatDuration(event.durationMs)}`,
          });
        else if (event.type === 'dod') update(id, { activity: `DoD ${event.dod.status}` });
        else if (event.type === 'transition' && event.to !== 'RUNNING') update(id, { activity: event.to });
      }
    }
  };
}
