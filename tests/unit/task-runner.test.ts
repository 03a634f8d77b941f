import { describe, expect, it } from 'vitest';
import type { StampedEvent } from '../../src/core/events.js';
import { Ledger } from '../../src/core/ledger.js';
import {
  taskLedger,
  TaskRunner,
  type TaskRecord,
  type TaskRunnerOptions,
} from '../../src/core/task-runner.js';
import type { MetaDecision, Plan } from '../../src/core/types.js';
import { ModelBehaviorError } from '../../src/errors.js';
import {
  FakeHuman,
  FakeSandboxes,
  FakeWorker,
  ManualClock,
  ScriptedMetaAgent,
  fakeRepo,
  testRunnerDeps,
  testRunnerOptions,
  type FakeRepo,
  type MetaStep,
  type WorkerEffect,
  usage,
  SLUGIFY_PLAN,
  runWorkerStep,
  assessStep,
  commitSlugify,
} from '../support/core-fakes.js';

const plan = SLUGIFY_PLAN;
const runWorker = (prompt = 'Implement slugify', patterns: string[] = ['implement_feature']): MetaStep =>
  runWorkerStep({ prompt, patterns });
const decide = (decision: Partial<MetaDecision> & Pick<MetaDecision, 'action'>): MetaStep => ({
  kind: 'decide',
  decision: { reason: 'because', usedPatterns: [], ...decision },
});
const assess = (satisfied: boolean): MetaStep => assessStep(satisfied, ['kept it small']);
const commitPassing = commitSlugify(true);
const commitFailing = commitSlugify(false, 'Add slugify (broken)');

async function setup(
  script: MetaStep[],
  effects: WorkerEffect[],
  options: Partial<TaskRunnerOptions> & {
    answers?: (string | null)[];
    repo?: FakeRepo;
    plan?: Plan;
    /** The project's ledger, when the task is a subtask. */
    parent?: Ledger;
  } = {},
) {
  const { repo = fakeRepo(), answers, plan: planned = plan, parent, ...runnerOptions } = options;
  // A resumed task starts from its earlier plan: no plan call.
  const meta = new ScriptedMetaAgent(
    options.previous ? script : [{ kind: 'plan', plan: planned }, ...script],
  );
  const worker = new FakeWorker(repo, effects);
  const sandboxes = new FakeSandboxes();
  const clock = new ManualClock();
  const human = new FakeHuman(answers ?? []);
  const events: StampedEvent[] = [];
  const notes: TaskRecord[] = [];
  const taskOptions = await testRunnerOptions({
    prd: '# Slugify\n\nAdd a slugify function.',
    startOptions: undefined,
    ...runnerOptions,
  });
  const runner = new TaskRunner(
    taskOptions,
    testRunnerDeps(
      repo,
      {
        meta,
        sandboxes,
        worker,
        human,
        clock,
        ...(parent ? { ledger: taskLedger(taskOptions, clock, parent) } : {}),
      },
      { notes, events },
    ),
  );
  return { runner, repo, meta, worker, sandboxes, clock, human, events, notes };
}

const states = (events: StampedEvent[]) =>
  events.filter((event) => event.type === 'transition').map((event) => (event as { to: string }).to);

describe('task runner loop', () => {
  it("a subtask counts its Meta-agent calls in the project's and stops once the project has none left", async () => {
    // Two calls already made elsewhere in the project; three left.
    const shared = new Ledger({ wallClock: 3_600_000, maxMetaCalls: 5 }, new ManualClock(), {
      earlier: { metaCalls: 2 },
    });
    const t = await setup(
      [runWorker(), assess(false), runWorker(), assess(false), runWorker(), assess(true)],
      [commitFailing, commitFailing, commitPassing],
      { parent: shared },
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.reason).toMatch(/the project's limit of 5 Meta-agent calls was reached/);
    expect(summary.metaCalls).toBe(3);
    expect(shared.metaCalls).toBe(5);
  });

  it('happy path: plan → run → facts + DoD → assessment → COMPLETE', async () => {
    const t = await setup([runWorker(), assess(true)], [commitPassing]);
    const summary = await t.runner.run();
    expect(summary.state).toBe('COMPLETE');
    expect(summary.exitCode).toBe(0);
    expect(summary.headSha).toBe('c1');
    expect(states(t.events)).toEqual(['PLANNING', 'RUNNING', 'VALIDATING', 'COMPLETE']);
    t.meta.assertComplete();
    expect(t.sandboxes.live.size).toBe(0);
    expect(t.notes).toHaveLength(1);
    expect(t.notes[0]?.runs[0]?.dod?.status).toBe('passed');
    // The worker prompt carries the AC, the scope and the chosen pattern.
    const prompt = t.worker.requests[0]?.prompt ?? '';
    expect(prompt).toContain('AC1');
    expect(prompt).toContain('### implement_feature');
    expect(prompt).toContain('You may write anything except excluded files.');
    // Usage: 3 Meta calls of 110 tokens, one worker run of 55 tokens priced at 1/10 USD per 1M.
    expect(summary.usage.total.inputTokens).toBe(3 * 100 + 50);
    expect(summary.usage.worker.costUsd).toBeCloseTo((50 * 1 + 5 * 10) / 1e6);
  });

  it('fix loop: unsatisfied → FIXING → second run with the reasons fed back → COMPLETE', async () => {
    const t = await setup(
      [runWorker(), assess(false), runWorker('Fix the failing test', ['fix_failing_checks']), assess(true)],
      [commitFailing, commitPassing],
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('COMPLETE');
    expect(summary.runs).toBe(2);
    expect(states(t.events)).toEqual([
      'PLANNING',
      'RUNNING',
      'VALIDATING',
      'FIXING',
      'RUNNING',
      'VALIDATING',
      'COMPLETE',
    ]);
    const secondDecision = t.meta.calls.filter((call) => call.kind === 'decide')[1];
    expect(secondDecision?.view?.feedback.join('\n')).toMatch(/DoD checks failing: test/);
    expect(secondDecision?.view?.history).toHaveLength(1);
    expect(t.worker.requests[1]?.prompt).toContain('Fix the failing test');
  });

  it('refuses mark_complete while DoD fails, and goes on', async () => {
    const t = await setup(
      [runWorker(), assess(true), decide({ action: 'mark_complete' }), runWorker('Fix it'), assess(true)],
      [commitFailing, commitPassing],
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('COMPLETE');
    const refused = t.events.filter((event) => event.type === 'refused');
    expect(refused.map((event) => (event as { reasons: string[] }).reasons.join(' '))).toEqual([
      expect.stringContaining('DoD checks failing'),
      expect.stringMatching(/mark_complete refused: .*DoD checks failing/),
    ]);
  });

  it('refuses mark_complete after an unsatisfied assessment even when DoD passes', async () => {
    const t = await setup(
      [runWorker(), assess(false), decide({ action: 'mark_complete', reason: 'it is done' })],
      [commitPassing],
    );
    // After the refusal the loop asks again; the script has ended, so the scripted model fails the task.
    const summary = await t.runner.run();
    expect(
      t.events.some(
        (event) => event.type === 'refused' && event.reasons.join().includes('mark_complete refused'),
      ),
    ).toBe(true);
    expect(summary.state).toBe('FAILED');
    expect(summary.reason).toMatch(/past the end of the script/);
  });

  it('resume observes the work first; mark_complete validates for real and completes from the facts', async () => {
    // The first attempt died after the worker committed: its run has no facts, no DoD, no assessment.
    const first = await setup([runWorker(), { kind: 'hang', on: 'assess' }], [commitPassing]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    await first.runner.run(controller.signal);
    const crashedRun = { ...first.notes[0]!.runs[0]! };
    delete crashedRun.facts;
    delete crashedRun.dod;
    delete crashedRun.assessment;
    const t = await setup([decide({ action: 'mark_complete', reason: 'already done' }), assess(true)], [], {
      repo: first.repo,
      previous: {
        plan,
        runs: [crashedRun],
        threadId: 'thread-1',
        metaCalls: 3,
        usage: first.notes[0]!.usage.meta,
      },
    });
    first.repo.dodRuns = 0;
    first.repo.checkRuns = 0;
    const summary = await t.runner.run();
    expect(summary.state).toBe('COMPLETE');
    expect(summary.reason).toBe('already done');
    t.meta.assertComplete();
    // Two Meta-agent calls after the resume; the facts were observed before the first of them.
    expect(t.meta.calls.map((call) => call.kind)).toEqual(['decide', 'assess']);
    expect(t.meta.calls[0]?.view?.latest?.facts.headSha).toBe('c1');
    expect(t.meta.calls[0]?.view?.latest?.dod?.status).toBe('passed');
    // Nothing changed between the observation and mark_complete: the DoD ran once, not twice.
    expect(first.repo.dodRuns).toBe(1);
    expect(summary.basis.join('\n')).toMatch(/Executable evidence: DoD test/);
  });

  it('an assessment of the same evidence is reused: mark_complete costs one call', async () => {
    const t = await setup(
      [
        runWorker(),
        assess(false),
        decide({ action: 'mark_complete', reason: 'try' }),
        decide({ action: 'abort' }),
      ],
      [commitPassing],
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('FAILED');
    t.meta.assertComplete();
    expect(t.meta.calls.filter((call) => call.kind === 'assess')).toHaveLength(1);
  });

  it('a repeated refused mark_complete on unchanged facts ends NEEDS_REVIEW (stalled) after maxStalls', async () => {
    const markComplete = decide({ action: 'mark_complete', reason: 'it is done' });
    const t = await setup(
      [runWorker(), assess(false), markComplete, markComplete, markComplete],
      [commitPassing],
      {
        limits: { maxIterations: 5, maxMetaCalls: 30, wallClock: 3_600_000, maxStalls: 3 },
      },
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.exitCode).toBe(3);
    expect(summary.reason).toMatch(/^stalled: the Meta-agent decided mark_complete 3 times in a row/);
    expect(summary.reason).toContain('the assessment says not every criterion is satisfied');
    // Exactly the script: one call per refusal, no tight loop, nothing past the third.
    t.meta.assertComplete();
    expect(summary.metaCalls).toBe(6);
    expect(t.events.some((event) => event.type === 'stalled')).toBe(true);
  });

  it('a worker run that changes the facts is progress, not a stall', async () => {
    const markComplete = decide({ action: 'mark_complete', reason: 'done?' });
    const t = await setup(
      [runWorker(), assess(false), markComplete, markComplete, runWorker('Fix'), assess(true)],
      [commitFailing, commitPassing],
      { limits: { maxIterations: 5, maxMetaCalls: 30, wallClock: 3_600_000, maxStalls: 3 } },
    );
    expect((await t.runner.run()).state).toBe('COMPLETE');
  });

  it("a critical criterion's failing command check blocks COMPLETE despite DoD and a satisfied assessment", async () => {
    const checked: Plan = {
      title: 'Add slugify',
      acceptanceCriteria: [
        {
          id: 'AC1',
          description: 'the CLI prints the slug',
          type: 'e2e',
          critical: true,
          check: { kind: 'command', command: 'node cli.js "A B" | grep -qx a-b' },
        },
      ],
    };
    const repo = fakeRepo();
    repo.commandExits['node cli.js "A B" | grep -qx a-b'] = 1;
    const t = await setup(
      [runWorker(), assess(true), decide({ action: 'abort', reason: 'stop' })],
      [commitPassing],
      {
        repo,
        plan: checked,
      },
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('FAILED');
    const refusals = t.events.filter((event) => event.type === 'refused').flatMap((event) => event.reasons);
    expect(refusals).toContain(
      'critical criterion AC1: its check command `node cli.js "A B" | grep -qx a-b` failed, exit 1',
    );
    expect(summary.criteria[0]?.checkResult).toMatchObject({
      status: 'failed',
      exitCode: 1,
      outputTail: 'exit 1',
    });
    expect(t.notes[0]?.runs[0]?.dod?.status).toBe('passed');
  });

  it('no DoD and no executable check: NEEDS_REVIEW "no executable evidence", not COMPLETE', async () => {
    const repo = fakeRepo();
    repo.hasDod = false;
    const t = await setup([runWorker(), assess(true)], [commitPassing], { repo });
    const summary = await t.runner.run();
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.exitCode).toBe(3);
    expect(summary.reason).toMatch(/^no executable evidence/);
    expect(summary.basis).toContain('Executable evidence: none.');
    t.meta.assertComplete();
  });

  it('no DoD but a passing criterion check is evidence enough', async () => {
    const repo = fakeRepo();
    repo.hasDod = false;
    repo.files.push('README.md');
    const withFile: Plan = {
      ...plan,
      acceptanceCriteria: [
        { ...plan.acceptanceCriteria[0]!, check: { kind: 'file_exists', file: 'README.md' } },
      ],
    };
    const t = await setup([runWorker(), assess(true)], [commitPassing], { repo, plan: withFile });
    const summary = await t.runner.run();
    expect(summary.state).toBe('COMPLETE');
    expect(summary.basis.join('\n')).toContain('Executable evidence: AC1 file_exists check.');
  });

  it('the wall clock of earlier attempts counts: a resumed task past its limit stops before any call', async () => {
    const t = await setup([], [], {
      previous: { plan, runs: [], threadId: null, metaCalls: 2, usage: usage(), elapsedMs: 3_600_000 },
    });
    const summary = await t.runner.run();
    expect(summary.exitCode).toBe(124);
    expect(t.meta.calls).toEqual([]);
  });

  it('Ctrl-C aborts a Meta-agent call in flight within a second', async () => {
    const controller = new AbortController();
    const t = await setup([{ kind: 'hang', on: 'decide' }], []);
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    const summary = await t.runner.run(controller.signal);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.exitCode).toBe(130);
  });

  it('headless ask_human → NEEDS_REVIEW, exit 3, the question kept for the note', async () => {
    const t = await setup([decide({ action: 'ask_human', question: 'Which locale?' })], []);
    const summary = await t.runner.run();
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.exitCode).toBe(3);
    expect(t.notes[0]?.question).toBe('Which locale?');
    expect(t.human.questions).toEqual([]);
  });

  it('interactive ask_human passes the answer back', async () => {
    const t = await setup(
      [decide({ action: 'ask_human', question: 'Which locale?' }), runWorker(), assess(true)],
      [commitPassing],
      { headless: false, answers: ['en-GB'] },
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('COMPLETE');
    expect(t.meta.calls[2]?.view?.feedback.join()).toContain('answered: en-GB');
  });

  it('max iterations → NEEDS_REVIEW with the work kept', async () => {
    const t = await setup(
      [runWorker(), assess(false), runWorker(), assess(false), runWorker()],
      [commitFailing, commitFailing],
      { limits: { maxIterations: 2, maxMetaCalls: 30, wallClock: 3_600_000, maxStalls: 3 } },
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.exitCode).toBe(3);
    expect(summary.reason).toMatch(/limit of 2 worker runs/);
    expect(summary.headSha).toBe('c2');
  });

  it('abort → FAILED, exit 1, note written', async () => {
    const t = await setup([decide({ action: 'abort', reason: 'the PRD contradicts itself' })], []);
    const summary = await t.runner.run();
    expect(summary.state).toBe('FAILED');
    expect(summary.exitCode).toBe(1);
    expect(summary.reason).toContain('the PRD contradicts itself');
    expect(t.notes).toHaveLength(1);
  });

  it('the wall clock ends in NEEDS_REVIEW with exit 124', async () => {
    const slow: WorkerEffect = (repo) => {
      commitFailing(repo, undefined as never);
      t.clock.time += 10_000;
    };
    const t = await setup([runWorker(), assess(false), runWorker()], [slow], {
      limits: { maxIterations: 5, maxMetaCalls: 30, wallClock: 5_000, maxStalls: 3 },
    });
    const summary = await t.runner.run();
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.exitCode).toBe(124);
  });

  it('token budget → NEEDS_REVIEW', async () => {
    const t = await setup([runWorker(), assess(false), runWorker()], [commitFailing], {
      limits: { maxIterations: 5, maxMetaCalls: 30, wallClock: 3_600_000, maxTokens: 300, maxStalls: 3 },
    });
    const summary = await t.runner.run();
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.reason).toMatch(/token budget/);
  });

  it('a run the gateway cut off for the budget ends NEEDS_REVIEW "budget" with no further Meta-agent call', async () => {
    const spent =
      'budget: the token budget of 300 is spent (310 tokens used by the Meta-agent and the worker)';
    const t = await setup(
      [runWorker()],
      [
        (repo, request) => {
          commitFailing(repo, request);
          return { exitCode: 1, failed: true, errors: ['403 budget_exhausted'], budgetExhausted: spent };
        },
      ],
    );
    const summary = await t.runner.run();
    expect(summary).toMatchObject({ state: 'NEEDS_REVIEW', reason: spent, exitCode: 3 });
    // No assessment was asked for (the script would have thrown), and the run's commit came back anyway.
    expect(t.meta.calls.map((call) => call.kind)).toEqual(['plan', 'decide']);
    expect(t.events.some((event) => event.type === 'facts')).toBe(true);
    expect(t.sandboxes.live.size).toBe(0);
  });

  it('a model error ends FAILED with its exit code, the note written and the sandbox stopped', async () => {
    const t = await setup(
      [
        {
          kind: 'error',
          on: 'decide',
          error: new ModelBehaviorError('protocol_invalid', 'reply stayed invalid'),
        },
      ],
      [],
    );
    const summary = await t.runner.run();
    expect(summary.state).toBe('FAILED');
    expect(summary.exitCode).toBe(5);
    expect(summary.error?.code).toBe('protocol_invalid');
    expect(t.notes[0]?.error?.message).toBe('reply stayed invalid');
    expect(t.sandboxes.live.size).toBe(0);
  });

  it('an interrupt preserves uncommitted work and ends NEEDS_REVIEW with exit 130', async () => {
    const controller = new AbortController();
    const t = await setup(
      [runWorker()],
      [
        (repo) => {
          repo.uncommitted.push('src/slug.js');
          controller.abort();
          return { interrupted: true, exitCode: 130, failed: true };
        },
      ],
    );
    const summary = await t.runner.run(controller.signal);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.exitCode).toBe(130);
    expect(t.repo.preserved).toEqual(['src/slug.js']);
    expect(t.notes[0]?.preservedRef).toBe('refs/agent-runner/wip/T-1');
    expect(t.sandboxes.live.size).toBe(0);
  });

  it('resume mode continues the worker thread', async () => {
    const resume: MetaStep = {
      kind: 'decide',
      decision: {
        action: 'run_worker',
        reason: 'continue',
        usedPatterns: [],
        workerCall: { workerType: 'codex', mode: 'resume', prompt: 'go on' },
      },
    };
    const t = await setup([runWorker(), assess(false), resume, assess(true)], [commitFailing, commitPassing]);
    await t.runner.run();
    expect(t.worker.requests[0]?.mode).toBe('exec');
    expect(t.worker.requests[1]?.mode).toBe('resume');
    expect(t.worker.requests[1]?.threadId).toBe('thread-1');
  });
});

describe('task runner: the gate checks the branch, not a shadow of it', () => {
  const PENDING_REF = 'refs/agent-runner/pending/T-1';
  /** The worker commits a tree the person's worktree cannot hold: the branch stays at the base. */
  const commitShadowed: WorkerEffect = (repo) => {
    commitPassing(repo, undefined as never);
    repo.pending = {
      branchHead: 'base000000',
      ref: PENDING_REF,
      reason:
        "the worktree /tmp/worktree could not be updated to it (git: error: cannot stat 'nnnn…': File name too long)",
    };
  };
  /** The worker renames the file: its new head fast-forwards the branch. */
  const renameOntoBranch: WorkerEffect = (repo) => {
    repo.commits.push({ sha: `c${repo.commits.length + 1}`, subject: 'Rename the long file' });
    repo.pending = null;
  };

  it('facts that say the branch is behind: refused, the Meta-agent told where the work is; once on the branch, COMPLETE', async () => {
    const t = await setup(
      [runWorker(), assess(true), runWorker('Rename the file with the long name'), assess(true)],
      [commitShadowed, renameOntoBranch],
    );
    const summary = await t.runner.run();
    const refused = t.events.filter((event) => event.type === 'refused');
    expect(refused).toHaveLength(1);
    const words = (refused[0] as { reasons: string[] }).reasons.join('\n');
    expect(words).toContain('the work is not on the task branch: agent-runner/T-1 is at base000000');
    expect(words).toContain(`kept at ${PENDING_REF}`);
    expect(words).toContain('File name too long');
    expect(words).toContain(`\`git log ${PENDING_REF}\``);
    const second = t.meta.calls.filter((call) => call.kind === 'decide')[1];
    expect(second?.view?.feedback.join('\n')).toContain(PENDING_REF);
    expect(summary.state).toBe('COMPLETE');
    expect(summary.runs).toBe(2);
    expect(summary.basis[1]).toBe(
      'Facts: 2 commit(s) on the task branch (head c2), clean tree, no scope violation.',
    );
  });

  it.each<[string, MetaStep[], Partial<TaskRunnerOptions>, string, RegExp]>([
    [
      'the worker-run limit',
      [runWorker(), assess(true), runWorker('Rename the file')],
      { limits: { maxIterations: 1, maxMetaCalls: 30, wallClock: 3_600_000, maxStalls: 3 } },
      'NEEDS_REVIEW',
      /^the limit of 1 worker runs was reached; /,
    ],
    [
      'an abort',
      [runWorker(), assess(true), decide({ action: 'abort', reason: 'cannot rename it' })],
      {},
      'FAILED',
      /^the Meta-agent aborted: cannot rename it; /,
    ],
  ])(
    'a task that ends on %s with its work on the pending ref names it and how to look at it',
    async (_name, script, options, state, start) => {
      const t = await setup(script, [commitShadowed], options);
      const summary = await t.runner.run();
      expect(summary.state).toBe(state);
      expect(summary.exitCode).not.toBe(0);
      expect(summary.reason).toMatch(start);
      expect(summary.reason).toContain(`kept at ${PENDING_REF}`);
      expect(summary.reason).toContain(`\`git log ${PENDING_REF}\``);
      expect(t.notes[0]?.reason).toBe(summary.reason);
      // The summary's head is where the branch is, not the pending head.
      expect(summary.headSha).toBe('base000000');
      // Never "on the task branch" for commits that are not on it.
      expect(summary.basis.join('\n')).not.toMatch(/commit\(s\) on the task branch/);
      expect(summary.basis[1]).toMatch(
        /^Facts: 1 commit\(s\) since the base, but the work is not on the task branch/,
      );
    },
  );

  it('a check that moves the sandbox checkout leaves no evidence about the head: not COMPLETE', async () => {
    const repo = fakeRepo();
    repo.dodChecksOut = 'elsewhere';
    const t = await setup(
      [runWorker(), assess(true), decide({ action: 'abort', reason: 'the checks move the checkout' })],
      [commitPassing],
      { repo },
    );
    const summary = await t.runner.run();
    const refused = t.events.filter((event) => event.type === 'refused');
    expect((refused[0] as { reasons: string[] }).reasons).toEqual([
      "the DoD and criteria checks did not run on the worker's head c1: the sandbox had another commit checked out, or its checkout moved while they ran",
    ]);
    expect(summary.state).toBe('FAILED');
    expect(summary.basis.join('\n')).toMatch(
      /Checks: the DoD and criteria checks did not run on the worker's head c1/,
    );
    // The run's record ties its checks to what they ran on.
    expect(t.notes[0]?.runs[0]?.checkedHead).toBeNull();
  });

  it('the checks run on the head they report: the record says so', async () => {
    const t = await setup([runWorker(), assess(true)], [commitPassing]);
    const summary = await t.runner.run();
    expect(summary.state).toBe('COMPLETE');
    expect(t.notes[0]?.runs[0]?.checkedHead).toBe('c1');
  });
});
