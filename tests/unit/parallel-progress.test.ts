import { describe, expect, it } from 'vitest';
import { safeOutput } from '../../src/cli/output.js';
import type { StampedEvent } from '../../src/core/events.js';
import { ZERO_USAGE } from '../../src/core/usage.js';
import type { PlannedSubtask, StampedProjectEvent } from '../../src/parallel/project-events.js';
import { Redaction } from '../../src/notes/redact.js';
import { createProjectProgress } from '../../src/parallel/project-progress.js';

/** The CLI's safe output over a capture of what reaches stderr, one entry per write. */
function stderrCapture(tty: boolean) {
  const writes: string[] = [];
  const output = safeOutput({ out: () => {}, err: (text) => writes.push(text), isTTY: tty }, new Redaction());
  return { output, writes };
}

const at = '2026-01-01T00:00:00.000Z';
const subtask = (id: string): PlannedSubtask => ({
  id,
  title: `Subtask ${id}`,
  prd: id,
  plan: { title: id, acceptanceCriteria: [] },
  writeScope: [`${id}/**`],
  readScope: [],
  blockedBy: [],
});

const events: StampedProjectEvent[] = [
  { type: 'project_plan', usage: ZERO_USAGE, split: true, at },
  {
    type: 'project_started',
    taskId: 'P',
    branch: 'agent-runner/P',
    baseSha: 'a'.repeat(40),
    max: 2,
    subtasks: [subtask('a'), subtask('b')],
    prd: '# P',
    prdPath: 'P.md',
    at,
  },
  {
    type: 'subtask_state',
    subtask: 'a',
    state: 'running',
    attempt: 1,
    taskId: 'P--a',
    reason: 'starting',
    at,
  },
  { type: 'subtask_waiting', subtask: 'b', kind: 'overlap', reason: 'waits for a (running)', at },
  { type: 'worker_started', run: 1, mode: 'exec', prompt: 'x', at, subtask: 'a' },
  { type: 'merge', subtask: 'a', branch: 'agent-runner/P--a', status: 'merged', sha: 'b'.repeat(40), at },
];

describe('project progress', () => {
  it('prints one line per change with the subtask id where there is no terminal', () => {
    const { output, writes: lines } = stderrCapture(false);
    const print = createProjectProgress(output, { tty: false, single: () => {} });
    for (const event of events) print(event);
    expect(lines).toEqual([
      'project P: 2 subtasks on agent-runner/P (base aaaaaaaaaa), at most 2 at once',
      '  a              waiting    Subtask a',
      '  b              waiting    Subtask b',
      '  a              running    starting',
      '  b              waiting    waits for a (running)',
      '  a              running    worker run 1',
      'merge agent-runner/P--a: merged (bbbbbbbbbb)',
    ]);
  });

  it('redraws the subtask lines in place on a terminal', () => {
    const { output, writes } = stderrCapture(true);
    const print = createProjectProgress(output, { tty: true, single: () => {} });
    for (const event of events) print(event);
    const last = writes.at(-1) ?? '';
    // The merge goes above the block, then the two subtask lines are drawn again.
    expect(writes.at(-2)).toBe('\x1b[2A\x1b[Jmerge agent-runner/P--a: merged (bbbbbbbbbb)');
    expect(last.split('\n')).toEqual([
      '\x1b[2K  a              running    worker run 1',
      '\x1b[2K  b              waiting    waits for a (running)',
    ]);
  });

  it('hands the events of a task that was not split to the task printer', () => {
    const single: StampedEvent[] = [];
    const print = createProjectProgress(stderrCapture(false).output, {
      tty: false,
      single: (event) => single.push(event),
    });
    print({ type: 'project_plan', usage: ZERO_USAGE, split: false, at });
    print({ type: 'transition', from: 'PENDING', to: 'PLANNING', at });
    expect(single.map((event) => event.type)).toEqual(['transition']);
  });

  it('on a terminal, a subtask doing something with escape sequences moves nothing: only the runner’s moves', () => {
    const { output, writes } = stderrCapture(true);
    const print = createProjectProgress(output, { tty: true, single: () => {} });
    for (const event of events.slice(0, 4)) print(event);
    const command = `echo \x1b[2J\x1b[H\x1b]0;title\x07 \u009b2J`;
    print({ type: 'worker_event', run: 1, event: { kind: 'command_started', command }, at, subtask: 'a' });
    const last = writes.at(-1) ?? '';
    expect(last.split('\n')).toEqual([
      '\x1b[2A\x1b[2K  a              running    $ echo \\x1b[2J\\x1b[H\\x1b]0;title\\x07 \\x9b2J',
      '\x1b[2K  b              waiting    waits for a (running)',
    ]);
    // Every ESC written is one of the runner's own moves (cursor up, clear line).
    expect(last.split('\x1b')).toHaveLength(4);
  });
});
