import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ZERO_USAGE } from '../../src/core/usage.js';
import { JournalInvalidError } from '../../src/notes/event-journal.js';
import { PROJECT_JOURNAL, readProjectJournal } from '../../src/parallel/project-journal.js';
import type { PlannedSubtask, ProjectEvent } from '../../src/parallel/project-events.js';

const subtask = (id: string): PlannedSubtask => ({
  id,
  title: id,
  prd: `Do ${id}.`,
  plan: {
    title: id,
    acceptanceCriteria: [{ id: 'AC-1', description: id, type: 'functional', critical: true }],
  },
  writeScope: [`src/${id}/**`],
  readScope: [],
  blockedBy: [],
});

function journalOf(events: ProjectEvent[], tail = ''): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-project-journal-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    path.join(dir, PROJECT_JOURNAL),
    events.map((event) => JSON.stringify({ ...event, at: '2026-01-01T00:00:00.000Z' })).join('\n') +
      '\n' +
      tail,
  );
  return dir;
}

const usage = { ...ZERO_USAGE, inputTokens: 10, outputTokens: 5 };

describe('readProjectJournal', () => {
  it('rebuilds the plan, merged subtasks, re-planned attempts and what was spent', () => {
    const replanned = {
      title: 'b',
      acceptanceCriteria: [{ id: 'AC-9', description: 'again', type: 'x', critical: true }],
    };
    const dir = journalOf(
      [
        { type: 'project_plan', usage, split: true },
        {
          type: 'project_started',
          taskId: 'P',
          branch: 'agent-runner/P',
          baseSha: 'a'.repeat(40),
          max: 2,
          subtasks: [subtask('a'), subtask('b')],
          prd: '# P',
          prdPath: '/repo/P.md',
        },
        { type: 'subtask_state', subtask: 'a', state: 'running', attempt: 1, taskId: 'P--a' },
        {
          type: 'review',
          subtask: 'a',
          taskId: 'P--a',
          review: { verdict: 'ok', summary: 'ok', findings: [] },
          usage,
        },
        { type: 'subtask_state', subtask: 'a', state: 'merged', attempt: 1, taskId: 'P--a' },
        {
          type: 'replan',
          subtask: 'b',
          attempt: 2,
          reason: 'ng',
          plan: replanned,
          prd: 'Do b, better.',
          usage,
        },
        { type: 'subtask_state', subtask: 'b', state: 'running', attempt: 2, taskId: 'P--b-r2' },
      ],
      '{"type":"subtask_state","subt', // a line cut by a crash
    );
    const resume = readProjectJournal(dir);
    expect(resume).toMatchObject({
      baseSha: 'a'.repeat(40),
      prd: '# P',
      merged: ['a'],
      attempts: { b: 2 },
      spent: { metaCalls: 3, usage: { inputTokens: 30, outputTokens: 15 } },
      finished: null,
    });
    expect(resume?.subtasks.find((entry) => entry.id === 'b')).toMatchObject({
      prd: 'Do b, better.',
      plan: replanned,
    });
  });

  it('is null for a task that was not split', () => {
    expect(readProjectJournal(journalOf([{ type: 'project_plan', usage, split: false }]))).toBeNull();
  });

  it('a damaged line fails with journal_invalid (exit 2) instead of resuming a wrong state', () => {
    const started = {
      type: 'project_started' as const,
      taskId: 'P',
      branch: 'agent-runner/P',
      baseSha: 'a'.repeat(40),
      max: 2,
      subtasks: [subtask('a')],
      prd: '# P',
      prdPath: '/repo/P.md',
    };
    // The same journal, intact, reads back: the probe sees a valid journal as valid.
    const intact = [
      started,
      { type: 'subtask_state', subtask: 'a', state: 'merged', attempt: 1, taskId: 'P--a' },
    ];
    expect(readProjectJournal(journalOf(intact as ProjectEvent[]))?.merged).toEqual(['a']);
    // A state the scheduler does not know, in a line that is not the last: damage, not a crash.
    const damaged = [
      started,
      { type: 'subtask_state', subtask: 'a', state: 'done', attempt: 1, taskId: 'P--a' },
      { type: 'project_plan', usage, split: true },
    ];
    const read = () => readProjectJournal(journalOf(damaged as ProjectEvent[]));
    expect(read).toThrow(JournalInvalidError);
    expect(read).toThrow(/damaged at line 2 \(subtask_state\) state: /);
    try {
      read();
    } catch (error) {
      expect((error as JournalInvalidError).exitCode).toBe(2);
    }
  });
});
