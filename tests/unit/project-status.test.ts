import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { formatStatusTable } from '../../src/cli/status-command.js';
import { listTasks, readTask } from '../../src/lifecycle/task-inventory.js';
import { ZERO_USAGE } from '../../src/core/usage.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const subtask = (id: string) => ({
  id,
  title: `Part ${id}`,
  prd: `# Part ${id}`,
  plan: { title: `Part ${id}`, acceptanceCriteria: [] },
  writeScope: [`src/${id}/**`],
  readScope: [],
  blockedBy: [],
});

/** A repository whose project P-1 (two subtasks, b re-planned once) ran as `run` journals it. */
function projectRepo(finished: boolean): string {
  const root = mkdtempSync(path.join(tmpdir(), 'ar-project-status-'));
  roots.push(root);
  const runs = path.join(root, '.agent-runner', 'runs');
  for (const id of ['P-1', 'P-1--a', 'P-1--b', 'P-1--b-r2', 'P-1--check-1', 'other-1'])
    mkdirSync(path.join(runs, id), { recursive: true });
  const at = (second: number) => `2026-01-01T00:00:${String(second).padStart(2, '0')}.000Z`;
  const events: object[] = [
    {
      type: 'project_started',
      taskId: 'P-1',
      branch: 'agent-runner/P-1',
      baseSha: 'a'.repeat(40),
      max: 2,
      subtasks: [subtask('a'), subtask('b')],
      prd: '# P',
      prdPath: 'PRD.md',
      at: at(1),
    },
    { type: 'subtask_state', subtask: 'a', state: 'running', attempt: 1, taskId: 'P-1--a', at: at(2) },
    { type: 'subtask_state', subtask: 'b', state: 'running', attempt: 1, taskId: 'P-1--b', at: at(3) },
    { type: 'subtask_state', subtask: 'a', state: 'merged', attempt: 1, taskId: 'P-1--a', at: at(4) },
    { type: 'subtask_state', subtask: 'b', state: 'failed', attempt: 2, taskId: 'P-1--b-r2', at: at(5) },
  ];
  if (finished)
    events.push({
      type: 'project_finished',
      // As the project writes it: a whole summary (the journal is validated when read).
      summary: {
        taskId: 'P-1',
        title: 'P',
        state: 'FAILED',
        reason: '1 of 2 subtasks merged (b failed)',
        branch: 'agent-runner/P-1',
        headSha: 'b'.repeat(40),
        notePath: null,
        worktreePath: null,
        runs: 2,
        metaCalls: 6,
        usage: { meta: ZERO_USAGE, worker: ZERO_USAGE, total: ZERO_USAGE },
        durationMs: 6000,
        exitCode: 1,
        error: null,
        basis: [],
        criteria: [],
      },
      at: at(6),
    });
  writeFileSync(
    path.join(runs, 'P-1', 'project.jsonl'),
    `${events.map((event) => JSON.stringify(event)).join('\n')}\n`,
  );
  return root;
}

describe('status of a project (a PRD split into subtasks)', () => {
  it("shows the parent's state and each subtask's, with the subtasks' own entries under it", async () => {
    const { tasks } = await listTasks(projectRepo(true));
    const parent = tasks.find((task) => task.taskId === 'P-1');
    expect(parent).toMatchObject({
      status: 'finished',
      state: 'FAILED',
      reason: '1 of 2 subtasks merged (b failed)',
      lastEventAt: '2026-01-01T00:00:06.000Z',
      branch: 'agent-runner/P-1',
    });
    expect(parent?.project?.subtasks).toEqual([
      { id: 'a', title: 'Part a', state: 'merged', taskId: 'P-1--a', blockedBy: [] },
      { id: 'b', title: 'Part b', state: 'failed', taskId: 'P-1--b-r2', blockedBy: [] },
    ]);
    expect(tasks.filter((task) => task.parent === 'P-1').map((task) => task.taskId)).toEqual([
      'P-1--a',
      'P-1--b',
      'P-1--b-r2',
      'P-1--check-1',
    ]);
    expect(tasks.find((task) => task.taskId === 'other-1')?.parent).toBeNull();

    const lines = formatStatusTable(tasks);
    const row = (start: string) => lines.findIndex((line) => line.startsWith(start));
    expect(lines[row('P-1 ')]).toMatch(
      /finished\s+FAILED .*1 of 2 subtasks merged \(b failed\); subtasks: a merged, b failed/,
    );
    // The subtasks' entries follow their parent, indented; the other task keeps its own row.
    expect(row('└ P-1--a')).toBe(row('P-1 ') + 1);
    expect(row('└ P-1--check-1')).toBe(row('P-1 ') + 4);
    expect(row('other-1')).toBeGreaterThan(row('└ P-1--check-1'));
  });

  it('one task read alone is the same entry as in the list, its parent included (the server reads it so)', async () => {
    const root = projectRepo(true);
    const { tasks } = await listTasks(root);
    for (const taskId of ['P-1', 'P-1--a', 'P-1--b-r2', 'P-1--check-1', 'other-1'])
      expect(readTask(root, taskId)).toEqual(tasks.find((task) => task.taskId === taskId));
    expect(readTask(root, 'P-1--missing')).toBeNull();
  });

  it('a project whose runner died is stale and resumed as a whole', async () => {
    const { tasks } = await listTasks(projectRepo(false));
    const parent = tasks.find((task) => task.taskId === 'P-1');
    expect(parent).toMatchObject({ status: 'stale', state: 'RUNNING', reason: null });
    const lines = formatStatusTable(tasks);
    expect(lines[lines.findIndex((line) => line.startsWith('P-1 '))]).toContain(
      'the runner stopped without finishing; subtasks: a merged, b failed',
    );
    expect(lines).toContain('Stale: P-1. Continue with `agent-runner resume <TASK-ID>`.');
  });
});
