import { describe, expect, it } from 'vitest';
import type { StampedEvent } from '../../src/core/events.js';
import type { GivenPlan, PlanHandedOff, WorkspacePreparation } from '../../src/core/ports.js';
import { TaskRunner, type TaskRecord } from '../../src/core/task-runner.js';
import type { Plan, Usage } from '../../src/core/types.js';
import { AgentRunnerError, ModelBehaviorError } from '../../src/errors.js';
import { loadPatternLibrary } from '../../src/patterns/pattern-library.js';
import {
  FakeSandboxes,
  FakeWorkspace,
  ScriptedMetaAgent,
  fakeRepo,
  testRunnerDeps,
  type FakeRepo,
  SLUGIFY_PLAN,
  type MetaStep,
} from '../support/core-fakes.js';

const plan = SLUGIFY_PLAN;

/** A rejected promise that is not reported as unhandled before the runner takes it. */
function rejected(error: unknown): Promise<never> {
  const promise = Promise.reject(error);
  promise.catch(() => undefined);
  return promise;
}

/** A promise the test resolves or rejects by hand. */
function gate<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

/**
 * A workspace whose preparation finishes when the test opens `opened`. It is mountable at the same moment,
 * or, with `mountableFirst`, when the test opens `mountable` (the files still being checked out).
 */
class GatedWorkspace extends FakeWorkspace {
  readonly opened = gate();
  readonly mountable = gate();
  constructor(
    repo: FakeRepo,
    private readonly log: string[],
    private readonly mountableFirst = false,
  ) {
    super(repo);
  }
  override prepare(): WorkspacePreparation {
    this.log.push('prepare started');
    const prepared = this.opened.promise.then(() => {
      this.log.push('prepare finished');
      return this.prepareTask();
    });
    const mountable = this.mountableFirst ? this.mountable.promise : prepared.then(() => undefined);
    return { mountable: Promise.race([mountable, prepared.then(() => undefined)]), prepared };
  }
}

/** Sandboxes whose create or set-up fails when told to. */
class FailingSandboxes extends FakeSandboxes {
  constructor(private readonly failing: 'create' | 'setUp') {
    super();
  }
  override async create(): Promise<string> {
    if (this.failing === 'create') throw new AgentRunnerError('sandbox_failed', 'no such image: worker');
    return super.create();
  }
  override async setUp(id: string): Promise<void> {
    if (this.failing === 'setUp') throw new AgentRunnerError('sandbox_failed', 'set-up: npm ci exited 1');
    return super.setUp(id);
  }
}

/** The scripted Meta-agent whose plan call is logged, and held until `release` when `hold` is set. */
class LoggedMeta extends ScriptedMetaAgent {
  readonly release = gate();
  signal: AbortSignal | undefined;
  constructor(
    script: MetaStep[],
    private readonly log: string[],
    private readonly hold: boolean,
  ) {
    super(script);
  }
  override async plan(request?: { signal?: AbortSignal }): Promise<{ plan: Plan; usage: Usage }> {
    this.log.push('plan requested');
    this.signal = request?.signal;
    if (this.hold) {
      await new Promise<void>((resolve, reject) => {
        void this.release.promise.then(resolve, reject);
        request?.signal?.addEventListener('abort', () => reject(new Error('plan aborted')));
      });
    }
    return super.plan({});
  }
  override async nextAction(
    view: Parameters<ScriptedMetaAgent['nextAction']>[0],
    signal?: AbortSignal,
  ): ReturnType<ScriptedMetaAgent['nextAction']> {
    this.log.push('decision requested');
    return super.nextAction(view, signal);
  }
}

async function setup(
  script: MetaStep[],
  hold: boolean,
  planError?: unknown,
  options: {
    mountableFirst?: boolean;
    sandboxes?: FakeSandboxes;
    givenPlan?: Promise<GivenPlan | PlanHandedOff>;
  } = {},
) {
  const log: string[] = [];
  const repo = fakeRepo();
  const meta = new LoggedMeta(script, log, hold);
  const workspace = new GatedWorkspace(repo, log, options.mountableFirst);
  const sandboxes = options.sandboxes ?? new FakeSandboxes();
  const events: StampedEvent[] = [];
  const notes: TaskRecord[] = [];
  const runner = new TaskRunner(
    {
      taskId: 'T-1',
      prd: '# Slugify\n\nAdd a slugify function.',
      limits: { maxIterations: 5, maxMetaCalls: 30, wallClock: 3_600_000, maxStalls: 3 },
      worker: { type: 'fake', model: 'm', timeoutMs: 60_000, graceMs: 1000 },
      prices: {},
      dodSkipped: false,
      headless: true,
      patterns: await loadPatternLibrary(),
      runDir: '/tmp/runs/T-1',
      ...(planError !== undefined ? { givenPlan: rejected(planError) } : {}),
      ...(options.givenPlan ? { givenPlan: options.givenPlan } : {}),
    },
    testRunnerDeps(repo, { meta, workspace, sandboxes }, { notes, events }),
  );
  return { runner, meta, workspace, sandboxes, events, notes, log };
}

const eventTypes = (events: StampedEvent[]) =>
  events
    .map((event) => event.type)
    .filter((type) => ['task_started', 'sandbox_started', 'plan', 'note_written'].includes(type));

describe('task start: planning does not wait for preparation', () => {
  it('asks the Meta-agent for the plan while the workspace is still being prepared', async () => {
    const t = await setup(
      [
        { kind: 'plan', plan },
        { kind: 'decide', decision: { action: 'abort', reason: 'stop here', usedPatterns: [] } },
      ],
      false,
    );
    const running = t.runner.run();
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The plan came back first, so the first decision was asked too, still beside the preparation.
    expect(t.log).toEqual(['plan requested', 'prepare started', 'decision requested']);
    t.workspace.opened.resolve();
    const summary = await running;
    expect(summary.state).toBe('FAILED');
    expect(summary.reason).toContain('stop here');
    // Events keep their order whatever finished first: task, sandbox, plan.
    expect(eventTypes(t.events)).toEqual(['task_started', 'sandbox_started', 'plan', 'note_written']);
    expect(t.notes[0]?.plan?.title).toBe('Add slugify');
    expect(t.sandboxes.live.size).toBe(0);
    t.meta.assertComplete();
  });

  it('a failed preparation aborts the planning request and starts no sandbox', async () => {
    const t = await setup([{ kind: 'plan', plan }], true);
    const running = t.runner.run();
    await new Promise((resolve) => setTimeout(resolve, 20));
    t.workspace.opened.reject(new AgentRunnerError('workspace_failed', 'git worktree add failed: disk'));
    const summary = await running;
    expect(t.meta.signal?.aborted).toBe(true);
    expect(summary.state).toBe('FAILED');
    expect(summary.reason).toContain('git worktree add failed: disk');
    expect(t.sandboxes.started).toBe(0);
    expect(eventTypes(t.events)).toEqual(['note_written']);
    expect(t.notes).toHaveLength(1);
  });

  it('a failed planning lets the preparation under way finish but starts no sandbox', async () => {
    const t = await setup(
      [
        {
          kind: 'error',
          on: 'plan',
          error: new AgentRunnerError('model_http_error', 'HTTP 500 from the model'),
        },
      ],
      false,
    );
    const running = t.runner.run();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(t.log).toEqual(['plan requested', 'prepare started']);
    t.workspace.opened.resolve();
    const summary = await running;
    expect(summary.state).toBe('FAILED');
    expect(summary.reason).toContain('HTTP 500 from the model');
    expect(t.log).toContain('prepare finished');
    expect(t.sandboxes.started).toBe(0);
    // The prepared workspace is recorded (the note names the branch), as when planning failed after it.
    expect(eventTypes(t.events)).toEqual(['task_started', 'note_written']);
    expect(t.notes[0]?.task?.branch).toBe('agent-runner/T-1');
    expect(t.notes).toHaveLength(1);
  });

  it('a planning call that failed before the task started ends it FAILED with that error, workspace prepared', async () => {
    const t = await setup(
      [],
      false,
      new ModelBehaviorError('model_unreachable', 'the Meta-agent endpoint is unreachable'),
    );
    t.workspace.opened.resolve();
    const summary = await t.runner.run();
    expect(summary.state).toBe('FAILED');
    expect(summary.error?.code).toBe('model_unreachable');
    expect(summary.exitCode).toBe(5);
    // Its own plan_task is not asked again.
    expect(t.log).not.toContain('plan requested');
    expect(t.sandboxes.started).toBe(0);
    expect(eventTypes(t.events)).toEqual(['task_started', 'note_written']);
    expect(t.notes[0]?.error?.code).toBe('model_unreachable');
  });
});

describe('task start: the sandbox starts while the files are checked out', () => {
  const tick = () => new Promise((resolve) => setTimeout(resolve, 20));
  const abortPlan: MetaStep[] = [
    { kind: 'plan', plan },
    { kind: 'decide', decision: { action: 'abort', reason: 'stop here', usedPatterns: [] } },
  ];

  it('creates the container once the workspace is mountable and sets it up once it is prepared', async () => {
    const t = await setup(abortPlan, false, undefined, { mountableFirst: true });
    const running = t.runner.run();
    await tick();
    expect(t.sandboxes.started).toBe(0);
    t.workspace.mountable.resolve();
    await tick();
    // The container is there while the preparation is not finished; nothing runs in it yet.
    expect(t.sandboxes.started).toBe(1);
    expect(t.log).not.toContain('prepare finished');
    expect(t.sandboxes.setUpIds).toEqual([]);
    t.workspace.opened.resolve();
    const summary = await running;
    expect(summary.reason).toContain('stop here');
    expect(t.sandboxes.setUpIds).toEqual(['sandbox-1']);
    expect(eventTypes(t.events)).toEqual(['task_started', 'sandbox_started', 'plan', 'note_written']);
    expect(t.sandboxes.live.size).toBe(0);
  });

  it('a preparation failing after the container started removes it', async () => {
    const t = await setup(abortPlan, true, undefined, { mountableFirst: true });
    const running = t.runner.run();
    t.workspace.mountable.resolve();
    await tick();
    expect(t.sandboxes.live.size).toBe(1);
    t.workspace.opened.reject(new AgentRunnerError('workspace_failed', 'git checkout failed: disk full'));
    const summary = await running;
    expect(summary.state).toBe('FAILED');
    expect(summary.reason).toContain('git checkout failed: disk full');
    expect(t.meta.signal?.aborted).toBe(true);
    expect(t.sandboxes.live.size).toBe(0);
    expect(t.sandboxes.setUpIds).toEqual([]);
    expect(eventTypes(t.events)).toEqual(['note_written']);
  });

  it('a container that fails to start lets the preparation finish, then fails the task with its error', async () => {
    const t = await setup(abortPlan, false, undefined, {
      mountableFirst: true,
      sandboxes: new FailingSandboxes('create'),
    });
    const running = t.runner.run();
    t.workspace.mountable.resolve();
    await tick();
    expect(t.log).not.toContain('prepare finished');
    t.workspace.opened.resolve();
    const summary = await running;
    expect(summary.state).toBe('FAILED');
    expect(summary.reason).toContain('no such image: worker');
    expect(t.log).toContain('prepare finished');
    // The note names the prepared branch.
    expect(eventTypes(t.events)).toEqual(['task_started', 'note_written']);
    expect(t.notes[0]?.task?.branch).toBe('agent-runner/T-1');
  });

  it('a failed set-up removes the sandbox, with nothing to preserve from it', async () => {
    const sandboxes = new FailingSandboxes('setUp');
    const t = await setup(abortPlan, false, undefined, { sandboxes });
    t.workspace.opened.resolve();
    const summary = await t.runner.run();
    expect(summary.state).toBe('FAILED');
    expect(summary.reason).toContain('npm ci exited 1');
    expect(sandboxes.started).toBe(1);
    expect(sandboxes.live.size).toBe(0);
    expect(t.events.map((event) => event.type)).not.toContain('preserved');
    expect(eventTypes(t.events)).toEqual(['task_started', 'note_written']);
  });

  it('a planning that failed after the container started removes it, unset up', async () => {
    const t = await setup(
      [{ kind: 'error', on: 'plan', error: new AgentRunnerError('model_http_error', 'HTTP 500') }],
      true,
      undefined,
      { mountableFirst: true },
    );
    const running = t.runner.run();
    t.workspace.mountable.resolve();
    await tick();
    expect(t.sandboxes.started).toBe(1);
    t.meta.release.resolve();
    await tick();
    t.workspace.opened.resolve();
    const summary = await running;
    expect(summary.reason).toContain('HTTP 500');
    expect(t.sandboxes.live.size).toBe(0);
    expect(t.sandboxes.setUpIds).toEqual([]);
    expect(eventTypes(t.events)).toEqual(['task_started', 'note_written']);
  });
});

describe('task start: a plan given from outside arrives while the task prepares', () => {
  const tick = () => new Promise((resolve) => setTimeout(resolve, 20));
  const usage: Usage = {
    inputTokens: 10,
    cachedInputTokens: 0,
    outputTokens: 5,
    reasoningTokens: 0,
    costUsd: 0,
  };

  it('prepares and starts the sandbox before the plan arrives, then runs on it as its own', async () => {
    const given = gate<GivenPlan | PlanHandedOff>();
    const t = await setup(
      [{ kind: 'decide', decision: { action: 'abort', reason: 'stop here', usedPatterns: [] } }],
      false,
      undefined,
      { givenPlan: given.promise },
    );
    const running = t.runner.run();
    t.workspace.opened.resolve();
    await tick();
    // The sandbox is up and set up while the plan is still on its way; plan_task is never asked.
    expect(t.sandboxes.setUpIds).toEqual(['sandbox-1']);
    expect(eventTypes(t.events)).toEqual(['task_started', 'sandbox_started']);
    given.resolve({ plan, usage, metaCalls: 1 });
    const summary = await running;
    expect(summary.reason).toContain('stop here');
    expect(t.log).not.toContain('plan requested');
    // The planner's call is the task's first: one given, one decision.
    expect(summary.metaCalls).toBe(2);
    // 10 input tokens of the given plan, 100 of the scripted decision.
    expect(summary.usage.meta.inputTokens).toBe(110);
    expect(eventTypes(t.events)).toEqual(['task_started', 'sandbox_started', 'plan', 'note_written']);
  });

  it('a plan known before the sandbox is ready: the first decision is asked while preparing, and taken', async () => {
    const t = await setup(
      [{ kind: 'decide', decision: { action: 'abort', reason: 'stop here', usedPatterns: [] } }],
      false,
      undefined,
      { givenPlan: Promise.resolve({ plan, usage, metaCalls: 1 }) },
    );
    const running = t.runner.run();
    await tick();
    // The preparation is still under way and the decision was asked already.
    expect(t.log).toEqual(['prepare started', 'decision requested']);
    expect(t.sandboxes.started).toBe(0);
    t.workspace.opened.resolve();
    const summary = await running;
    expect(summary.reason).toContain('stop here');
    // Asked once, counted once: the given plan and the one decision.
    expect(summary.metaCalls).toBe(2);
    expect(summary.usage.meta.inputTokens).toBe(110);
    expect(t.log.filter((entry) => entry === 'decision requested')).toHaveLength(1);
    // Recorded in the task's order: the decision after the plan.
    const types = t.events.map((event) => event.type);
    expect(types.indexOf('decision')).toBeGreaterThan(types.indexOf('plan'));
    expect(types.indexOf('plan')).toBeGreaterThan(types.indexOf('sandbox_started'));
    t.meta.assertComplete();
  });

  it('an early decision whose task then fails to prepare is not taken, and what it spent is counted', async () => {
    const t = await setup(
      [{ kind: 'decide', decision: { action: 'abort', reason: 'never taken', usedPatterns: [] } }],
      false,
      undefined,
      { givenPlan: Promise.resolve({ plan, usage, metaCalls: 1 }) },
    );
    const running = t.runner.run();
    await tick();
    expect(t.log).toContain('decision requested');
    t.workspace.opened.reject(new AgentRunnerError('workspace_failed', 'git worktree add failed: disk'));
    const summary = await running;
    expect(summary.state).toBe('FAILED');
    expect(summary.reason).toContain('git worktree add failed: disk');
    expect(summary.reason).not.toContain('never taken');
    expect(t.events.map((event) => event.type)).not.toContain('decision');
    expect(summary.usage.meta.inputTokens).toBeGreaterThanOrEqual(100);
  });

  it('a hand-off after the sandbox was set up removes it and ends the task unrun: no note', async () => {
    const given = gate<GivenPlan | PlanHandedOff>();
    const t = await setup([], false, undefined, { givenPlan: given.promise });
    const running = t.runner.runOrHandOff();
    t.workspace.opened.resolve();
    await tick();
    expect(t.sandboxes.live.size).toBe(1);
    given.resolve({ handedOff: true });
    const result = await running;
    expect(result.kind).toBe('handed_off');
    if (result.kind === 'handed_off') expect(result.task?.branch).toBe('agent-runner/T-1');
    expect(t.sandboxes.live.size).toBe(0);
    expect(t.notes).toHaveLength(0);
    expect(t.events.map((event) => event.type)).not.toContain('task_finished');
    t.meta.assertComplete();
  });

  it('a hand-off before the workspace is mountable creates no container', async () => {
    const t = await setup([], false, undefined, {
      mountableFirst: true,
      givenPlan: Promise.resolve({ handedOff: true }),
    });
    const running = t.runner.runOrHandOff();
    await tick();
    t.workspace.mountable.resolve();
    t.workspace.opened.resolve();
    const result = await running;
    expect(result.kind).toBe('handed_off');
    expect(t.sandboxes.started).toBe(0);
    expect(t.notes).toHaveLength(0);
  });
});
