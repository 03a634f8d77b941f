/**
 * One fleet node's task boards as `serve --control` runs them (FleetTaskBoards), without the database: a state
 * directory of its own (its repository cache), the fleet's copy of a task's journal given line by line, and a
 * forge token in `GH_TOKEN`. What the node logs is kept for the test.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createApp } from '../../src/app.js';
import { Redaction } from '../../src/notes/redact.js';
import { FleetTaskBoards } from '../../src/serve/fleet-task-runner.js';
import { tempDir } from './bare-remote.js';

/** A finished task's journal (`events.jsonl` of `runDir`), line by line: what the fleet's copy holds. */
export function journalLines(runDir: string): string[] {
  return readFileSync(path.join(runDir, 'events.jsonl'), 'utf8').trim().split('\n');
}

export function fleetNodeBoards(journal: string[], token: string) {
  const state = tempDir('ar-fleet-node-');
  const env = { ...process.env, GH_TOKEN: token, XDG_STATE_HOME: state };
  const redaction = new Redaction();
  const lines: string[] = [];
  /** What the node handed to the fleet's database: each task's journal as it was once the task had ended. */
  const copied: { taskId: string; journal: string[] }[] = [];
  const boards = new FleetTaskBoards(createApp(env, {}, redaction), env, redaction, {
    journalOf: async () => journal,
    copyEvents: async (task, journalFile, ended) => {
      while (!ended()) await new Promise((resolve) => setTimeout(resolve, 50));
      copied.push({ taskId: task.taskId, journal: readFileSync(journalFile, 'utf8').trim().split('\n') });
    },
    log: (line) => lines.push(line),
  });
  return { boards, lines, env, state, copied };
}
