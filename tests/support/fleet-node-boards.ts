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
  const boards = new FleetTaskBoards(createApp(env, {}, redaction), env, redaction, {
    journalOf: async () => journal,
    log: (line) => lines.push(line),
  });
  return { boards, lines, env, state };
}
