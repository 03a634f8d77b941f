/**
 * The loop around the replay with honest fakes of its ports: a replay over a bound ends NEEDS_REVIEW (exit 3)
 * before any check runs; Ctrl-C/SIGTERM reaches an observation that would otherwise run on, and the finish
 * does not start it again; a worker's flood of events is bounded in the journal with a closing count.
 */
import { describe, expect, it } from 'vitest';
import type { StampedEvent } from '../../src/core/events.js';
import type { TaskFacts } from '../../src/core/types.js';
import { OBSERVE_MIN_MS } from '../../src/core/task-loop.js';
import { TaskRunner, type TaskRecord } from '../../src/core/task-runner.js';
import { MAX_WORKER_EVENTS_PER_RUN, MAX_WORKER_EVENT_TEXT_CHARS } from '../../src/core/worker-event-bound.js';
import {
  FakeWorker,
  FakeWorkspace,
  ManualClock,
  ScriptedMetaAgent,
  fakeRepo,
  testRunnerDeps,
  testRunnerOptions,
  type FakeRepo,
  type WorkerEffect,
  SLUGIFY_PLAN,
  runWorkerStep,
  commitSlugify,
} from '../support/core-fakes.js';

const plan = SLUGIFY_PLAN;
const runWorker = runWorkerStep();
const commit = commitSlugify(true);

/** A workspace whose observation is what the test makes of it (the fake's facts otherwise). */
class ObservedWorkspace extends FakeWorkspace {
  observations = 0;
  constructor(
    repo: FakeRepo,
    private readonly observeAs: (facts: TaskFacts, signal?: AbortSignal) => Promise<TaskFacts>,
  ) {
    super(repo);
  }
  override async observe(_sandboxId?: string, signal?: AbortSignal): Promise<TaskFacts> {
    this.observations += 1;
    return this.observeAs(await super.observe(), signal);
  }
}

async function setup(workspace: (repo: FakeRepo) => FakeWorkspace, effect: WorkerEffect = commit) {
  const repo = fakeRepo();
  const events: StampedEvent[] = [];
  const notes: TaskRecord[] = [];
  const ws = workspace(repo);
  const runner = new TaskRunner(
    await testRunnerOptions({ startOptions: undefined }),
    testRunnerDeps(
      repo,
      {
        meta: new ScriptedMetaAgent([{ kind: 'plan', plan }, runWorker]),
        worker: new FakeWorker(repo, [effect]),
        workspace: ws,
        clock: new ManualClock(),
      },
      { notes, events },
    ),
  );
  return { runner, repo, events, notes, workspace: ws };
}

describe('the replay in the loop', () => {
  it('a replay over a bound ends NEEDS_REVIEW with exit 3, naming the key, before any check runs', async () => {
    const t = await setup(
      (repo) =>
        new ObservedWorkspace(repo, async (facts) => ({
          ...facts,
          replayCapped: { cap: 'max_commits', limit: 500, actual: 2000 },
        })),
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.exitCode).toBe(3);
    expect(summary.reason).toContain('sandbox.replay.maxCommits');
    expect(summary.reason).toContain('2000 new commits');
    expect(t.repo.dodRuns).toBe(0);
    expect(t.notes).toHaveLength(1);
  });

  it('SIGTERM reaches an observation that would run on; the finish does not start it again (exit 130)', async () => {
    const controller = new AbortController();
    const t = await setup(
      (repo) =>
        new ObservedWorkspace(
          repo,
          // A replay that never ends on its own: only the signal it is given stops it.
          (_facts, signal) =>
            new Promise((_resolve, reject) => {
              if (!signal) return;
              signal.addEventListener('abort', () => reject(new Error('replay cut')), { once: true });
              setTimeout(() => controller.abort(), 20);
            }),
        ),
    );
    const started = Date.now();
    const summary = await t.runner.run(controller.signal);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.reason).toBe('interrupted');
    expect(summary.exitCode).toBe(130);
    expect((t.workspace as ObservedWorkspace).observations).toBe(1);
    expect(t.notes).toHaveLength(1);
  });

  it('the wall clock cuts an observation that would run on, after at least OBSERVE_MIN_MS (exit 124)', async () => {
    const repo = fakeRepo();
    const notes: TaskRecord[] = [];
    const clock = new ManualClock();
    // The run itself uses up the task's minute of wall clock; the replay after it never ends on its own.
    const spendTheClock: WorkerEffect = (fake, request) => {
      commit(fake, request);
      clock.time += 61_000;
    };
    const workspace = new ObservedWorkspace(
      repo,
      (_facts, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(new Error('replay cut')), { once: true });
        }),
    );
    const runner = new TaskRunner(
      await testRunnerOptions({
        startOptions: undefined,
        limits: { maxIterations: 5, maxMetaCalls: 30, wallClock: 60_000, maxStalls: 3 },
      }),
      testRunnerDeps(
        repo,
        {
          meta: new ScriptedMetaAgent([{ kind: 'plan', plan }, runWorker]),
          worker: new FakeWorker(repo, [spendTheClock]),
          workspace,
          clock,
        },
        { notes },
      ),
    );
    const started = Date.now();
    const summary = await runner.run();
    const waited = Date.now() - started;
    // Cut by the clock, not by the replay ending: never before the observation's floor, not long after it.
    expect(waited).toBeGreaterThanOrEqual(OBSERVE_MIN_MS - 50);
    expect(waited).toBeLessThan(OBSERVE_MIN_MS + 15_000);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.exitCode).toBe(124);
    expect(workspace.observations).toBe(1);
    expect(notes).toHaveLength(1);
  }, 40_000);

  it('keeps the first worker events of a run, each text bounded, and says how many were not kept', async () => {
    const flood: WorkerEffect = (repo, request) => {
      commit(repo, request);
      for (let index = 0; index < MAX_WORKER_EVENTS_PER_RUN + 3_000; index += 1)
        request.onEvent?.({ kind: 'command_started', command: `echo ${index} ${'x'.repeat(10_000)}` });
    };
    const t = await setup((repo) => new FakeWorkspace(repo), flood);
    await t.runner.run();
    const kept = t.events.filter((event) => event.type === 'worker_event');
    expect(kept).toHaveLength(MAX_WORKER_EVENTS_PER_RUN);
    const first = kept[0] as Extract<StampedEvent, { type: 'worker_event' }>;
    const command = (first.event as { command: string }).command;
    expect(command.length).toBeLessThan(MAX_WORKER_EVENT_TEXT_CHARS + 100);
    expect(command).toContain('[cut: 10,007 characters, showing the first 4,000]');
    const dropped = t.events.find((event) => event.type === 'worker_events_dropped');
    expect(dropped).toMatchObject({ run: 1, kept: MAX_WORKER_EVENTS_PER_RUN, dropped: 3_000 });
    // It comes after the run's last kept event and before the run ends.
    const order = t.events.map((event) => event.type);
    expect(order.indexOf('worker_events_dropped')).toBeLessThan(order.indexOf('worker_finished'));
  });
});
