import { describe, expect, it } from 'vitest';
import type { DodOutcome, Plan, TaskSummary } from '../../src/core/types.js';
import { Ledger } from '../../src/core/ledger.js';
import { limitMessage, type SpendingLimits } from '../../src/core/limits.js';
import { ZERO_USAGE } from '../../src/core/usage.js';
import { ProjectOrchestrator, type OrchestratorOptions } from '../../src/parallel/orchestrator.js';
import type {
  IntegrationPort,
  MergeResult,
  ProjectMetaPort,
  SubtaskRunRequest,
  SubtaskRunnerPort,
} from '../../src/parallel/ports.js';
import type { PlannedSubtask, ProjectEvent, ReviewVerdict } from '../../src/parallel/project-events.js';

const plan = (title: string): Plan => ({
  title,
  acceptanceCriteria: [{ id: 'AC-1', description: title, type: 'functional', critical: true }],
});

const subtask = (id: string, write: string[], blockedBy: string[] = []): PlannedSubtask => ({
  id,
  title: `Subtask ${id}`,
  prd: `Do ${id}.`,
  plan: plan(id),
  writeScope: write,
  readScope: [],
  blockedBy,
});

function summary(taskId: string, state: TaskSummary['state']): TaskSummary {
  return {
    taskId,
    title: taskId,
    state,
    reason: state === 'COMPLETE' ? 'done' : 'the worker gave up',
    branch: `agent-runner/${taskId}`,
    headSha: 'f'.repeat(40),
    notePath: null,
    worktreePath: null,
    runs: 1,
    metaCalls: 2,
    usage: { meta: ZERO_USAGE, worker: ZERO_USAGE, total: ZERO_USAGE },
    durationMs: 10,
    exitCode: state === 'COMPLETE' ? 0 : 1,
    error: null,
    basis: [],
    criteria: [],
  };
}

const dod = (status: DodOutcome['status']): DodOutcome => ({
  status,
  results: [
    {
      name: 'test',
      command: 'npm test',
      status: status === 'passed' ? 'passed' : 'failed',
      exitCode: status === 'passed' ? 0 : 1,
      durationMs: 5,
      outputTail: '',
    },
  ],
  ranOnDirtyTree: false,
  source: 'config',
});

/** An integration branch in memory: merges append to a list of merged branches. */
class FakeIntegration implements IntegrationPort {
  readonly branch = 'agent-runner/P';
  merged: string[] = [];
  conflicts = new Set<string>();
  /** Combined DoD results to give, in order; then passed. */
  dods: DodOutcome['status'][] = [];
  resets: string[] = [];
  async head() {
    return `sha-${this.merged.length}`;
  }
  async baseFiles() {
    return ['src/a/index.js', 'src/b/index.js'];
  }
  async merge(branch: string): Promise<MergeResult> {
    if (this.conflicts.has(branch)) {
      this.conflicts.delete(branch);
      return { status: 'conflict', files: ['src/shared.js'], sha: await this.head() };
    }
    this.merged.push(branch);
    return { status: 'merged', sha: await this.head() };
  }
  async resetTo(sha: string) {
    this.resets.push(sha);
    this.merged.pop();
  }
  async diff() {
    return 'diff --git a/x b/x';
  }
  async combinedDod() {
    return dod(this.dods.shift() ?? 'passed');
  }
}

/** Runs subtasks by a table of outcomes per task id (default COMPLETE); records every request. */
class FakeRunner implements SubtaskRunnerPort {
  requests: SubtaskRunRequest[] = [];
  running = 0;
  peak = 0;
  constructor(private readonly outcomes: Record<string, TaskSummary['state']> = {}) {}
  async run(request: SubtaskRunRequest) {
    this.requests.push(request);
    this.running += 1;
    this.peak = Math.max(this.peak, this.running);
    await new Promise((resolve) => setTimeout(resolve, 5));
    // A task counts its Meta-agent calls as it makes them (its summary says 2).
    request.parent.countMeta(ZERO_USAGE);
    request.parent.countMeta(ZERO_USAGE);
    this.running -= 1;
    return { summary: summary(request.taskId, this.outcomes[request.taskId] ?? 'COMPLETE') };
  }
}

/**
 * Subtasks that keep asking the Meta-agent, as a task does, until the shared count says stop: one call every
 * millisecond, all of them at once.
 */
class TalkativeRunner extends FakeRunner {
  override async run(request: SubtaskRunRequest) {
    this.requests.push(request);
    let calls = 0;
    let reason: string | null = null;
    // The subtask's own ledger, spending from the project's, as a task's does.
    const own = new Ledger(request.limits, clock, { parent: request.parent });
    const spent = () => {
      const reached = own.exhausted();
      return reached ? limitMessage(reached) : null;
    };
    while ((reason = spent()) === null && calls < 1000) {
      own.countMeta(ZERO_USAGE);
      calls += 1;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const ended = summary(request.taskId, reason === null ? 'COMPLETE' : 'NEEDS_REVIEW');
    return { summary: { ...ended, metaCalls: calls, reason: reason ?? 'done' } };
  }
}

class FakeMeta implements ProjectMetaPort {
  replans: string[] = [];
  constructor(private readonly verdicts: Record<string, ReviewVerdict['verdict']> = {}) {}
  async review({ taskId }: { taskId: string }) {
    const verdict = this.verdicts[taskId] ?? 'ok';
    return {
      review: {
        verdict,
        summary: verdict,
        findings:
          verdict === 'ng'
            ? [{ file: 'src/a/index.js', line: 3, severity: 'major' as const, message: 'wrong' }]
            : [],
      },
      usage: ZERO_USAGE,
    };
  }
  async replan({ taskId, reason }: { taskId: string; reason: string }) {
    this.replans.push(`${taskId}: ${reason}`);
    return { plan: plan('again'), usage: ZERO_USAGE };
  }
}

const clock = { now: () => Date.now(), sleep: async () => {} };

function orchestrate(
  subtasks: PlannedSubtask[],
  parts: {
    runner?: FakeRunner;
    integration?: FakeIntegration;
    meta?: FakeMeta;
    options?: Partial<OrchestratorOptions>;
    budget?: SpendingLimits;
  } = {},
) {
  const runner = parts.runner ?? new FakeRunner();
  const integration = parts.integration ?? new FakeIntegration();
  const meta = parts.meta ?? new FakeMeta();
  const events: ProjectEvent[] = [];
  // The project's planning call is spent already.
  const ledger = new Ledger(parts.budget ?? { wallClock: 60_000, maxMetaCalls: 100 }, clock, {
    earlier: { metaCalls: 1, meta: ZERO_USAGE },
  });
  const orchestrator = new ProjectOrchestrator(
    {
      taskId: 'P',
      prd: '# P',
      subtasks,
      max: 2,
      maxReplans: 1,
      maxFixups: 1,
      ...parts.options,
    },
    { runner, integration, meta, clock, ledger, emit: (event) => events.push(event as ProjectEvent) },
  );
  return { orchestrator, runner, integration, meta, events };
}

const A = subtask('a', ['src/a/**']);
const B = subtask('b', ['src/b/**']);
const C = subtask('c', ['docs/**'], ['a', 'b']);

describe('ProjectOrchestrator', () => {
  it("subtasks running at once share the project's Meta-agent calls: together they stop at the limit", async () => {
    const runner = new TalkativeRunner();
    const { orchestrator } = orchestrate([A, B], {
      runner,
      budget: { wallClock: 60_000, maxMetaCalls: 21 },
    });
    const outcome = await orchestrator.run();
    // The project's plan (spent: 1) and both subtasks, counted together: never past the limit.
    expect(outcome.metaCalls).toBe(21);
    expect(outcome.state).not.toBe('COMPLETE');
    const ran = runner.requests.map((request) => request.taskId).sort();
    expect(ran).toEqual(['P--a', 'P--b']);
  });

  it('runs independent subtasks at once and the dependent one from the integration branch after both merged', async () => {
    const { orchestrator, runner, integration } = orchestrate([A, B, C]);
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('COMPLETE');
    expect(runner.peak).toBe(2);
    expect(integration.merged.slice(-1)).toEqual(['agent-runner/P--c']);
    const c = runner.requests.find((request) => request.subtask === 'c');
    expect(c?.base).toBe('sha-2');
    expect(outcome.merges.map((merge) => merge.dod?.status)).toEqual(['passed', 'passed', 'passed']);
  });

  it('an ng review re-plans the subtask with the findings; the new attempt runs on its own branch', async () => {
    const meta = new FakeMeta({ 'P--a': 'ng' });
    const { orchestrator, runner, integration } = orchestrate([A, B], { meta });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('COMPLETE');
    expect(meta.replans).toEqual([expect.stringContaining('P--a: the review said ng')]);
    const retry = runner.requests.find((request) => request.taskId === 'P--a-r2');
    expect(retry?.prd).toContain('src/a/index.js:3 (major): wrong');
    expect(integration.merged).toContain('agent-runner/P--a-r2');
    expect(integration.merged).not.toContain('agent-runner/P--a');
  });

  it('a conflict re-plans the subtask, which starts again from the integration branch', async () => {
    const integration = new FakeIntegration();
    integration.conflicts.add('agent-runner/P--b');
    const { orchestrator, meta } = orchestrate([A, B], { integration });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('COMPLETE');
    expect(meta.replans).toEqual([expect.stringContaining('conflicted in src/shared.js')]);
    expect(outcome.merges.map((merge) => `${merge.subtask}:${merge.status}`)).toContain('b:conflict');
  });

  it('a red combined DoD runs a fix-up on the integration branch and merges it', async () => {
    const integration = new FakeIntegration();
    integration.dods = ['failed'];
    const { orchestrator, runner } = orchestrate([A], { integration });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('COMPLETE');
    const fixup = runner.requests.find((request) => request.taskId === 'P--fixup-1');
    expect(fixup?.base).toBe('sha-1');
    expect(fixup?.writeScope).toEqual(['src/a/**']);
    expect(integration.merged).toEqual(['agent-runner/P--a', 'agent-runner/P--fixup-1']);
  });

  it('a fix-up that fails takes the merge back and re-plans; after the last attempt the subtask fails', async () => {
    const integration = new FakeIntegration();
    integration.dods = ['failed', 'failed'];
    const runner = new FakeRunner({ 'P--fixup-1': 'FAILED', 'P--fixup-2': 'FAILED' });
    const { orchestrator, meta } = orchestrate([A], { integration, runner });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('FAILED');
    expect(integration.resets).toEqual(['sha-0', 'sha-0']);
    expect(meta.replans).toHaveLength(1);
    expect(outcome.subtasks[0]?.reason).toContain('not merged after 2 attempt(s)');
  });

  it('a failing subtask skips what waits for it but not the independent one', async () => {
    const runner = new FakeRunner({ 'P--a': 'FAILED' });
    const { orchestrator, integration, events } = orchestrate([A, B, C], { runner });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('FAILED');
    expect(integration.merged).toEqual(['agent-runner/P--b']);
    expect(outcome.subtasks.map((record) => `${record.subtask.id}:${record.state}`)).toEqual([
      'a:failed',
      'b:merged',
      'c:skipped',
    ]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'subtask_state', subtask: 'c', state: 'skipped' }),
    );
  });

  it('starts nothing new once the project budget is spent, and ends NEEDS_REVIEW', async () => {
    const { orchestrator, runner } = orchestrate([A, B, C], {
      budget: { wallClock: 60_000, maxMetaCalls: 4 },
    });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('NEEDS_REVIEW');
    expect(outcome.reason).toContain('the limit of 4 Meta-agent calls was reached');
    expect(runner.requests.map((request) => request.subtask).sort()).toEqual(['a', 'b']);
  });

  it('an interrupt stops starting subtasks; those already merged stay merged', async () => {
    const controller = new AbortController();
    const runner = new FakeRunner();
    const original = runner.run.bind(runner);
    runner.run = async (request) => {
      const result = await original(request);
      controller.abort();
      return result;
    };
    const { orchestrator } = orchestrate([subtask('a', ['src/a/**']), subtask('b', ['src/b/**'], ['a'])], {
      runner,
    });
    const outcome = await orchestrator.run(controller.signal);
    expect(outcome.state).toBe('NEEDS_REVIEW');
    expect(runner.requests.map((request) => request.subtask)).toEqual(['a']);
  });

  it('a resumed project keeps merged subtasks and runs only the rest', async () => {
    const { orchestrator, runner } = orchestrate([A, B, C], { options: { merged: ['a', 'b'] } });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('COMPLETE');
    expect(runner.requests.map((request) => request.subtask)).toEqual(['c']);
  });
});
