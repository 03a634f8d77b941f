/**
 * Reading a project's journal (`.agent-runner/runs/<ID>/project.jsonl`) back: what `resume <ID>` continues
 * from. The plan (with each subtask's latest attempt after re-plans), the base, which subtasks merged, and
 * what was already spent on the project's own Meta-agent calls.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ForgeKind } from '../core/events.js';
import type { TaskSummary, Usage } from '../core/types.js';
import { addUsage, ZERO_USAGE } from '../core/usage.js';
import { readJournal } from '../notes/event-journal.js';
import { projectJournalLineSchema, type PlannedSubtask } from './project-events.js';
import type { SubtaskState } from './scheduler.js';

/** The project journal's file in `.agent-runner/runs/<ID>/` (the task journal `events.jsonl` is not used). */
export const PROJECT_JOURNAL = 'project.jsonl';

/** Where a resumed project starts from. */
export interface ProjectResume {
  baseSha: string;
  prd: string;
  prdPath: string;
  /** The forge named when it started, for a later resume or deliver that names none. */
  forge?: ForgeKind;
  /** As last planned: a re-planned subtask carries its new criteria, PRD and attempt. */
  subtasks: PlannedSubtask[];
  attempts: Record<string, number>;
  merged: string[];
  spent: { metaCalls: number; usage: Usage };
  finished: TaskSummary | null;
  /** Each subtask's last state and the task id of its last attempt (`status`). */
  states: Record<string, { state: SubtaskState; taskId: string }>;
  /** When the first event of the project's journal was written: when the project was created. */
  firstEventAt: string | null;
  /** When the last event of the project's journal was written. */
  lastEventAt: string | null;
}

/** Reads the journal; null when the task has none (it was not split). */
export function readProjectJournal(runDir: string): ProjectResume | null {
  const file = path.join(runDir, PROJECT_JOURNAL);
  if (!existsSync(file)) return null;
  // Validated line by line: a damaged journal fails with `journal_invalid`, never resumes a wrong state.
  const events = readJournal(file, projectJournalLineSchema);
  const started = events.find((event) => event.type === 'project_started');
  if (!started || started.type !== 'project_started') return null;
  const subtasks = new Map(started.subtasks.map((subtask) => [subtask.id, subtask]));
  const attempts: Record<string, number> = {};
  const states = new Map<string, string>();
  const last: ProjectResume['states'] = {};
  let metaCalls = 0;
  let usage = ZERO_USAGE;
  let finished: TaskSummary | null = null;
  for (const event of events) {
    switch (event.type) {
      case 'project_plan':
        metaCalls += 1;
        usage = addUsage(usage, event.usage);
        break;
      case 'review':
        metaCalls += 1;
        usage = addUsage(usage, event.usage);
        break;
      case 'replan': {
        metaCalls += 1;
        usage = addUsage(usage, event.usage);
        const subtask = subtasks.get(event.subtask);
        if (subtask) subtasks.set(event.subtask, { ...subtask, plan: event.plan, prd: event.prd });
        attempts[event.subtask] = event.attempt;
        break;
      }
      case 'subtask_state':
        states.set(event.subtask, event.state);
        last[event.subtask] = { state: event.state, taskId: event.taskId };
        break;
      case 'project_finished':
        finished = event.summary;
        break;
      default:
        break;
    }
  }
  return {
    baseSha: started.baseSha,
    prd: started.prd,
    prdPath: started.prdPath,
    ...(started.forge ? { forge: started.forge } : {}),
    subtasks: [...subtasks.values()],
    attempts,
    merged: [...states].filter(([, state]) => state === 'merged').map(([id]) => id),
    spent: { metaCalls, usage },
    finished,
    states: last,
    firstEventAt: (events[0] as { at?: string } | undefined)?.at ?? null,
    lastEventAt: (events.at(-1) as { at?: string } | undefined)?.at ?? null,
  };
}
