import { describe, expect, it } from 'vitest';
import type { StampedEvent } from '../../src/core/events.js';
import { TaskRunner, type TaskRecord, type TaskRunnerOptions } from '../../src/core/task-runner.js';
import { assertResumable, previousAttempt } from '../../src/lifecycle/journal-resume.js';
import { foldJournal } from '../../src/lifecycle/task-journal-state.js';
import {
  FakeWorker,
  ScriptedMetaAgent,
  fakeRepo,
  testRunnerDeps,
  testRunnerOptions,
  type MetaStep,
  type WorkerEffect,
  SLUGIFY_PLAN,
  runWorkerStep,
  assessStep,
  commitSlugify,
} from '../support/core-fakes.js';

const plan = SLUGIFY_PLAN;
const runWorker = (mode: 'exec' | 'resume' = 'exec'): MetaStep => runWorkerStep({ mode, reason: 'work' });
const assess = (satisfied: boolean): MetaStep => assessStep(satisfied);
const commit = (passing: boolean) => commitSlugify(passing);

async function runTask(
  script: MetaStep[],
  effects: WorkerEffect[],
  options: Partial<TaskRunnerOptions> = {},
) {
  const repo = fakeRepo();
  const events: StampedEvent[] = [];
  const notes: TaskRecord[] = [];
  const meta = new ScriptedMetaAgent(options.previous ? script : [{ kind: 'plan', plan }, ...script]);
  const worker = new FakeWorker(repo, effects);
  const runner = new TaskRunner(
    await testRunnerOptions(options),
    testRunnerDeps(
      repo,
      { meta, worker, onEvent: (event) => events.push(structuredClone(event)) },
      { notes },
    ),
  );
  // Journals are JSON lines: what resume reads has been through JSON.
  const summary = await runner.run();
  return { summary, events: JSON.parse(JSON.stringify(events)) as StampedEvent[], notes, worker, meta };
}

describe('journal → task state', () => {
  it('rebuilds plan, runs (with facts, DoD, assessment), Meta-agent calls and usage of a finished attempt', async () => {
    const first = await runTask(
      [
        runWorker(),
        assess(false),
        { kind: 'decide', decision: { action: 'abort', reason: 'stop', usedPatterns: [] } },
      ],
      [commit(false)],
    );
    const state = foldJournal('T-1', first.events);
    const record = first.notes[0];
    expect(state.options).toEqual({ prdPath: '/repo/PRD.md', prd: '# Slugify', dodSkipped: false });
    expect(state.plan).toEqual(plan);
    expect(state.runs).toEqual(JSON.parse(JSON.stringify(record?.runs)));
    expect(state.runs[0]?.facts).toBeDefined();
    expect(state.runs[0]?.assessment?.summary).toBe('test fails');
    expect(state.runs[0]?.refusals.length).toBeGreaterThan(0);
    expect(state.metaCalls).toBe(record?.metaCalls);
    expect(state.metaUsage).toEqual(record?.usage.meta);
    expect(state.workerUsage).toEqual(record?.usage.worker);
    expect(state.threadId).toBe('thread-1');
    expect(state.finished?.state).toBe('FAILED');
    expect(state.unfinishedRun).toBeNull();
  });

  it('a journal cut mid-run (kill -9) yields the cut run with its thread, and resume continues it', async () => {
    const first = await runTask([runWorker(), assess(true)], [commit(true)]);
    // Everything up to the worker's start and its thread: what a runner killed during the run leaves.
    const cut = first.events.findIndex((event) => event.type === 'worker_started');
    expect(cut).toBeGreaterThan(0);
    const events: StampedEvent[] = [
      ...first.events.slice(0, cut + 1),
      {
        type: 'worker_event',
        run: 1,
        event: { kind: 'thread_started', threadId: 'thread-1' },
        at: '2026-01-01T00:00:01.000Z',
      },
    ];
    const state = foldJournal('T-1', events);
    expect(state.finished).toBeNull();
    expect(state.unfinishedRun?.run).toBe(1);
    expect(state.runs).toHaveLength(1);
    expect(state.runs[0]).toMatchObject({ index: 1, threadId: 'thread-1', failed: true, exitCode: -1 });
    expect(state.runs[0]?.errors[0]).toContain('agent-runner stopped during this run');
    const previous = previousAttempt(state);
    expect(previous?.feedback.join(' ')).toContain('Worker run 1 (exec) was cut short');

    // Resume: no plan call, the thread is continued, the cut run counts as run 1.
    const resumed = await runTask([runWorker('resume'), assess(true)], [commit(true)], {
      previous: previous ?? undefined,
    });
    expect(resumed.summary.state).toBe('COMPLETE');
    expect(resumed.worker.requests[0]).toMatchObject({ mode: 'resume', threadId: 'thread-1' });
    expect(resumed.summary.runs).toBe(2);
    expect(resumed.summary.metaCalls).toBe(state.metaCalls + 2);
    // Both attempts in one journal fold into one history.
    const both = foldJournal('T-1', [...events, ...resumed.events]);
    expect(both.attempts).toBe(2);
    expect(both.runs.map((run) => run.index)).toEqual([1, 2]);
    expect(both.finished?.state).toBe('COMPLETE');
  });

  it('a journal without a plan gives no previous attempt (resume starts over)', () => {
    const state = foldJournal('T-1', [
      {
        type: 'task_started',
        taskId: 'T-1',
        branch: 'agent-runner/T-1',
        baseSha: 'abc',
        worktreePath: '/w',
        dirtyStart: false,
        at: '2026-01-01T00:00:00.000Z',
      },
    ]);
    expect(state.attempts).toBe(1);
    expect(previousAttempt(state)).toBeNull();
  });

  it('keeps the wall clock used by every attempt and the answers the person gave', () => {
    const started = (at: string): StampedEvent => ({
      type: 'task_started',
      taskId: 'T-1',
      branch: 'agent-runner/T-1',
      baseSha: 'abc',
      worktreePath: '/w',
      dirtyStart: false,
      at,
    });
    const state = foldJournal('T-1', [
      started('2026-01-01T00:00:00.000Z'),
      {
        type: 'plan',
        plan,
        usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0, costUsd: 0 },
        at: '2026-01-01T00:00:10.000Z',
      },
      { type: 'human', question: 'Which locale?', answer: 'en-GB', at: '2026-01-01T00:01:00.000Z' },
      { type: 'human', question: 'Anything else?', answer: null, at: '2026-01-01T00:02:00.000Z' },
      // A day later: the gap between attempts is not task time.
      started('2026-01-02T00:00:00.000Z'),
      { type: 'transition', from: 'PENDING', to: 'PLANNING', at: '2026-01-02T00:00:30.000Z' },
    ]);
    expect(state.elapsedMs).toBe(120_000 + 30_000);
    expect(state.answers).toEqual([{ question: 'Which locale?', answer: 'en-GB' }]);
    const previous = previousAttempt(state);
    expect(previous?.elapsedMs).toBe(150_000);
    expect(previous?.feedback.join('\n')).toContain(
      'Earlier, the person was asked "Which locale?" and answered: en-GB',
    );
  });

  it('checks what resume builds on against the record schemas', async () => {
    const first = await runTask(
      [
        runWorker(),
        assess(false),
        { kind: 'decide', decision: { action: 'abort', reason: 'stop', usedPatterns: [] } },
      ],
      [commit(false)],
    );
    expect(() => assertResumable(foldJournal('T-1', first.events), 'events.jsonl')).not.toThrow();
    const edited = first.events.map((event) =>
      event.type === 'run_recorded' ? { ...event, record: { ...event.record, exitCode: 'zero' } } : event,
    ) as StampedEvent[];
    expect(() => assertResumable(foldJournal('T-1', edited), 'events.jsonl')).toThrow(
      /events\.jsonl of task T-1 cannot be resumed: run 1 exitCode: .*number/,
    );
  });
});
