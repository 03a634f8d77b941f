import { describe, expect, it } from 'vitest';
import type { DodOutcome, Plan, TaskSummary } from '../../src/core/types.js';
import { Ledger } from '../../src/core/ledger.js';
import { limitMessage, type SpendingLimits } from '../../src/core/limits.js';
import { ZERO_USAGE } from '../../src/core/usage.js';
import { ProjectOrchestrator, type OrchestratorOptions } from '../../src/parallel/orchestrator.js';
import type { CombinedCheck } from '../../src/parallel/project-events.js';
import type {
  FileChange,
  IntegrationPort,
  MergeResult,
  SubtaskCriteria,
  ProjectMetaPort,
  SubtaskRunRequest,
  SubtaskRunnerPort,
} from '../../src/parallel/ports.js';
import type {
  PlannedSubtask,
  ProjectEvent,
  ReviewVerdict,
  SubtaskTaskEvent,
} from '../../src/parallel/project-events.js';

const plan = (title: string): Plan => ({
  title,
  acceptanceCriteria: [
    {
      id: 'AC-1',
      description: title,
      type: 'functional',
      critical: true,
      check: { kind: 'command', command: `test -f ${title}` },
    },
  ],
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

/**
 * An integration branch in memory: each merge makes a new head; a reset goes back to a head's merged list.
 * The combined DoD is red while a culprit branch is merged (unless a fix-up merged after it), or as `dods`
 * says; a subtask's criterion fails while a branch that `breaks` it is merged.
 */
class FakeIntegration implements IntegrationPort {
  readonly branch = 'agent-runner/P';
  merged: string[] = [];
  conflicts = new Set<string>();
  /** Combined DoD results to give, in order; then by the culprits. */
  dods: DodOutcome['status'][] = [];
  culprits = new Set<string>();
  /** Branch → the subtask whose critical criterion fails while that branch is merged. */
  breaks = new Map<string, string>();
  /** Branch → the files it changed (what the fix-up review is told). */
  changed = new Map<string, FileChange[]>();
  resets: string[] = [];
  /** Each combined check: its label and the subtasks whose criteria it ran. */
  checks: { label: string; subtasks: string[] }[] = [];
  checkMs = 0;
  private current = 'sha-0';
  private count = 0;
  private readonly states = new Map<string, string[]>([['sha-0', []]]);
  async head() {
    return this.current;
  }
  async baseFiles() {
    return ['src/a/index.js', 'src/b/index.js'];
  }
  async merge(branch: string): Promise<MergeResult> {
    if (this.conflicts.has(branch)) {
      this.conflicts.delete(branch);
      return { status: 'conflict', files: ['src/shared.js'], sha: this.current };
    }
    this.merged.push(branch);
    this.count += 1;
    this.current = `sha-${this.count}`;
    this.states.set(this.current, [...this.merged]);
    return { status: 'merged', sha: this.current };
  }
  async resetTo(sha: string) {
    this.resets.push(sha);
    this.current = sha;
    this.merged = [...(this.states.get(sha) ?? [])];
  }
  async diff() {
    return 'diff --git a/x b/x';
  }
  async changes(_base: string, branch: string) {
    return this.changed.get(branch) ?? [];
  }
  async combinedCheck(label: string, criteria: readonly SubtaskCriteria[]): Promise<CombinedCheck> {
    this.checks.push({ label, subtasks: criteria.map((group) => group.subtask) });
    if (this.checkMs) await new Promise((resolve) => setTimeout(resolve, this.checkMs));
    const culprit = this.merged.findIndex((branch) => this.culprits.has(branch));
    const repaired = culprit !== -1 && this.merged.slice(culprit).some((branch) => branch.includes('fixup'));
    const status = this.dods.shift() ?? (culprit !== -1 && !repaired ? 'failed' : 'passed');
    const broken = new Set(this.merged.map((branch) => this.breaks.get(branch)));
    return {
      subtask: label,
      headSha: this.current,
      dod: dod(status),
      criteria: criteria.flatMap((group) =>
        group.criteria.map((criterion) => ({
          subtask: group.subtask,
          criterionId: criterion.id,
          critical: criterion.critical,
          kind: 'command',
          target: `test -f ${group.subtask}`,
          status: broken.has(group.subtask) ? ('failed' as const) : ('passed' as const),
          exitCode: broken.has(group.subtask) ? 1 : 0,
          durationMs: 1,
          outputTail: '',
          reason: '',
          ranOnDirtyTree: false,
        })),
      ),
    };
  }
}

/** Runs subtasks by a table of outcomes per task id (default COMPLETE); records every request. */
class FakeRunner implements SubtaskRunnerPort {
  requests: SubtaskRunRequest[] = [];
  running = 0;
  peak = 0;
  /** Milliseconds a task id takes (default 5). */
  delays: Record<string, number> = {};
  /** Heads whose checks pass, one validation each, reported as a task's events before it ends. */
  passingHeads: Record<string, string[]> = {};
  /** The head a task id ends on (default its last passing head, else f...f). */
  finalHeads: Record<string, string> = {};
  constructor(private readonly outcomes: Record<string, TaskSummary['state']> = {}) {}
  async run(request: SubtaskRunRequest) {
    this.requests.push(request);
    this.running += 1;
    this.peak = Math.max(this.peak, this.running);
    const heads = this.passingHeads[request.taskId] ?? [];
    for (const [index, headSha] of heads.entries()) {
      const event = (fields: object) =>
        request.onEvent({ at: '', subtask: request.subtask, run: index + 1, ...fields } as SubtaskTaskEvent);
      event({ type: 'facts', facts: { headSha, dirty: false } });
      event({ type: 'dod', dod: dod('passed') });
      event({ type: 'criteria_checks', results: [] });
      // The assessment of this head takes a while.
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    await new Promise((resolve) => setTimeout(resolve, this.delays[request.taskId] ?? 5));
    // A task counts its Meta-agent calls as it makes them (its summary says 2).
    request.parent.countMeta(ZERO_USAGE);
    request.parent.countMeta(ZERO_USAGE);
    this.running -= 1;
    const ended = summary(request.taskId, this.outcomes[request.taskId] ?? 'COMPLETE');
    const headSha = this.finalHeads[request.taskId] ?? heads.at(-1) ?? ended.headSha;
    return { summary: { ...ended, headSha } };
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
  /** What each review was shown, by task id. */
  shown = new Map<string, string>();
  /** How long a review takes. */
  reviewMs = 0;
  /** Each review asked: task id and the start of what it was shown. */
  reviews: string[] = [];
  constructor(private readonly verdicts: Record<string, ReviewVerdict['verdict']> = {}) {}
  async review({ taskId, evidence }: { taskId: string; evidence: { summary: string } }) {
    this.shown.set(taskId, evidence.summary);
    this.reviews.push(`${taskId}: ${evidence.summary.slice(0, 60)}`);
    if (this.reviewMs) await new Promise((resolve) => setTimeout(resolve, this.reviewMs));
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
    expect(outcome.merges.map((merge) => merge.check?.dod.status)).toEqual(['passed', 'passed', 'passed']);
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

  it("a fix-up that makes the DoD green by deleting a subtask's work is caught by that subtask's criterion and taken back", async () => {
    const integration = new FakeIntegration();
    integration.culprits.add('agent-runner/P--b');
    // The fix-up "repairs" the DoD by removing a's files: a's own criterion fails on the combined tree.
    integration.breaks.set('agent-runner/P--fixup-1', 'a');
    integration.changed.set('agent-runner/P--fixup-1', [
      { status: 'M', path: 'src/b/index.js' },
      { status: 'D', path: 'src/a/index.js' },
    ]);
    const runner = new FakeRunner();
    runner.delays['P--b'] = 30;
    const { orchestrator, meta, events } = orchestrate([A, B], {
      integration,
      runner,
      options: { maxReplans: 0 },
    });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('FAILED');
    expect(integration.checks).toEqual([
      { label: 'a', subtasks: ['a'] },
      { label: 'b', subtasks: ['a', 'b'] },
      { label: 'b + fix-up', subtasks: ['a', 'b'] },
    ]);
    // The reviewer of the fix-up was told whose work it changed, deletions first.
    expect(meta.shown.get('P--fixup-1')).toMatch(
      /DELETED 1 .*\n- subtask a: deleted src\/a\/index\.js\n- subtask b: modified src\/b\/index\.js/,
    );
    const b = outcome.subtasks.find((record) => record.subtask.id === 'b');
    expect(b?.state).toBe('failed');
    expect(b?.reason).toContain('subtask `a`, criterion AC-1: `test -f a` failed');
    // The record is of the head that remained (a merged, its check passed), not the reverted red one.
    expect(integration.merged).toEqual(['agent-runner/P--a']);
    expect(outcome.headSha).toBe('sha-1');
    expect(outcome.combined).toMatchObject({ headSha: 'sha-1', subtask: 'a', dod: { status: 'passed' } });
    expect(outcome.merges.at(-1)).toMatchObject({ status: 'reverted', sha: 'sha-1' });
    expect(outcome.merges.at(-1)?.check?.headSha).toBe('sha-1');
    const red = events.find((event) => event.type === 'combined_dod' && event.subtask === 'b + fix-up') as
      CombinedCheck | undefined;
    expect(red?.dod.status).toBe('passed');
    expect(red?.criteria?.find((result) => result.status === 'failed')).toMatchObject({ subtask: 'a' });
  });

  it('a fix-up the review says ng to is not merged: the merge is taken back and the subtask planned again', async () => {
    const integration = new FakeIntegration();
    integration.culprits.add('agent-runner/P--a');
    const meta = new FakeMeta({ 'P--fixup-1': 'ng' });
    const { orchestrator, events } = orchestrate([A], { integration, meta });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('COMPLETE');
    expect(integration.merged).toEqual(['agent-runner/P--a-r2']);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'fixup', taskId: 'P--fixup-1', state: 'REJECTED' }),
    );
    expect(meta.replans).toEqual([expect.stringContaining('no fix-up repaired it')]);
    expect(outcome.fixupReviews).toEqual([
      { fixup: 'fixup-1', subtask: 'a', review: expect.objectContaining({ verdict: 'ng' }) },
    ]);
  });

  it('an idle train waits for the reviews under way: subtasks reviewed about together share one check', async () => {
    const run = async (gatherMs: number) => {
      const runner = new FakeRunner();
      runner.delays = { 'P--a': 5, 'P--b': 10, 'P--c': 15 };
      const meta = new FakeMeta();
      meta.reviewMs = 30;
      const { orchestrator, integration } = orchestrate([A, B, subtask('c', ['docs/**'])], {
        runner,
        meta,
        options: { max: 3, gatherMs },
      });
      expect((await orchestrator.run()).state).toBe('COMPLETE');
      return integration.checks.map((check) => check.label.split(', ').sort().join(' '));
    };
    expect(await run(200)).toEqual(['a b c']);
    // Without the wait the first one reviewed leaves alone.
    expect((await run(0)).length).toBeGreaterThan(1);
  });

  it('reviewed subtasks ready together merge as one candidate; a red batch is bisected to its culprit', async () => {
    const D = subtask('d', ['src/d/**']);
    const integration = new FakeIntegration();
    integration.culprits.add('agent-runner/P--d');
    // a merges first and its check is slow: b, c and d are reviewed meanwhile and wait together.
    integration.checkMs = 40;
    const runner = new FakeRunner();
    runner.delays = { 'P--a': 1, 'P--b': 10, 'P--c': 10, 'P--d': 10 };
    const { orchestrator } = orchestrate([A, B, subtask('c', ['docs/**']), D], {
      integration,
      runner,
      options: { max: 4 },
    });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('COMPLETE');
    expect(integration.checks.map((check) => check.label)).toEqual([
      'a',
      'b, c, d',
      'b',
      'c',
      'd',
      'd + fix-up',
    ]);
    expect(integration.merged).toEqual([
      'agent-runner/P--a',
      'agent-runner/P--b',
      'agent-runner/P--c',
      'agent-runner/P--d',
      'agent-runner/P--fixup-1',
    ]);
    expect(outcome.merges.map((merge) => `${merge.subtask}:${merge.status}`)).toEqual([
      'a:merged',
      'b:merged',
      'c:merged',
      'd:merged',
      'b, c, d:reverted',
      'b:merged',
      'c:merged',
      'd:merged',
      'fixup-1:merged',
    ]);
    // The last check ran every subtask's criteria on the final tree.
    expect(integration.checks.at(-1)?.subtasks.sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it("asks a subtask's review as soon as its checks passed, beside the assessment; taken only for the head it ends on", async () => {
    const runner = new FakeRunner();
    runner.passingHeads = { 'P--a': ['a1'], 'P--b': ['b1', 'b2'], 'P--c': ['c1'] };
    // c's task ends on another commit than the one its checks passed on: its early review is not taken.
    runner.finalHeads = { 'P--c': 'c9' };
    const meta = new FakeMeta();
    meta.reviewMs = 10;
    const { orchestrator, events } = orchestrate([A, B, subtask('c', ['docs/**'])], {
      runner,
      meta,
      options: { max: 3 },
    });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('COMPLETE');
    const reviewsOf = (taskId: string) =>
      meta.reviews
        .filter((review) => review.startsWith(`${taskId}:`))
        .map((review) => review.slice(taskId.length + 2));
    // a: one review, asked early (before its task ended), and taken.
    expect(reviewsOf('P--a')).toEqual([expect.stringContaining('passed its checks')]);
    const types = events.map((event) => `${event.type}:${'subtask' in event ? event.subtask : ''}`);
    expect(types.indexOf('review:a')).toBeLessThan(types.indexOf('subtask_finished:a'));
    // b: each head reviewed as its checks passed; the review of the head it ended on is the one taken.
    expect(reviewsOf('P--b')).toHaveLength(2);
    expect(outcome.subtasks.find((record) => record.subtask.id === 'b')?.reviews).toHaveLength(1);
    const bReviews = events.filter((event) => event.type === 'review' && event.subtask === 'b');
    expect(bReviews.map((event) => (event as { headSha?: string }).headSha)).toEqual(['b1', 'b2']);
    // c: the early review judged c1, the task ended on c9: c9 is reviewed after it ended.
    expect(reviewsOf('P--c')).toEqual([
      expect.stringContaining('passed its checks'),
      expect.stringContaining('ended COMPLETE'),
    ]);
    // Every review asked is counted: the plan, two calls per task, and four reviews.
    expect(outcome.metaCalls).toBe(1 + 3 * 2 + 4 + 1);
  });

  it('an early review of a subtask that then fails is not taken, but counted before the outcome', async () => {
    const runner = new FakeRunner({ 'P--a': 'FAILED' });
    runner.passingHeads = { 'P--a': ['a1'] };
    const meta = new FakeMeta();
    // Slower than the rest of the task: still under way when the task ends.
    meta.reviewMs = 80;
    const { orchestrator, events } = orchestrate([A], { runner, meta });
    const outcome = await orchestrator.run();
    expect(outcome.state).toBe('FAILED');
    expect(outcome.subtasks[0]?.reviews).toEqual([]);
    // The plan, the task's two calls, and the early review.
    expect(outcome.metaCalls).toBe(4);
    expect(events.filter((event) => event.type === 'review')).toHaveLength(1);
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
