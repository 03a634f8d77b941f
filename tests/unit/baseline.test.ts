/**
 * The baseline: the DoD on the base before any change, compared check by check with later runs, and what the
 * completion gate, the basis and the loop make of it (honest fakes of the ports; the real DoD in the sandbox is
 * tests/e2e/real-projects-red-base.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { compareWithBase, comparisonText, withBaseline } from '../../src/core/baseline.js';
import { decisionBasis, gateRefusals, type GateInput } from '../../src/core/completion-gate.js';
import type { StampedEvent } from '../../src/core/events.js';
import { refusalMessage } from '../../src/core/refusal.js';
import { TaskRunner, type TaskRecord } from '../../src/core/task-runner.js';
import type { Baseline, DodCheckResult, DodOutcome, TaskFacts } from '../../src/core/types.js';
import {
  FakeWorker,
  FakeWorkspace,
  ScriptedMetaAgent,
  assessStep,
  cleanFacts,
  fakeRepo,
  runWorkerStep,
  testRunnerDeps,
  testRunnerOptions,
  type FakeRepo,
} from '../support/core-fakes.js';

function result(overrides: Partial<DodCheckResult> = {}): DodCheckResult {
  return {
    name: 'test',
    command: 'npm test',
    status: 'failed',
    exitCode: 1,
    durationMs: 5,
    outputTail: '',
    ...overrides,
  };
}

const redBase = result({ failingTests: ['old bug'], tests: { passed: 3, failed: 1, skipped: 0 } });

describe('compareWithBase', () => {
  it('green on the base: a failure now is broken by this task', () => {
    const base = result({ status: 'passed', exitCode: 0 });
    expect(compareWithBase(result(), base)?.verdict).toBe('green_before');
    expect(comparisonText({ ...result(), base: compareWithBase(result(), base) })).toBe(
      'broken by this task (it passed on the base)',
    );
  });

  it('red on the base with the same failing tests (or fewer): not worse', () => {
    expect(compareWithBase(result({ failingTests: ['old bug'] }), redBase)?.verdict).toBe('red_before');
    const worse = compareWithBase(result({ failingTests: ['old bug', 'new break'] }), redBase);
    expect(worse).toMatchObject({ verdict: 'worse', newFailures: ['new break'] });
  });

  it('without names on both runs the counts decide; without counts it cannot be shown not worse', () => {
    const base = result({ tests: { passed: 3, failed: 2, skipped: 0 } });
    expect(compareWithBase(result({ tests: { passed: 4, failed: 2, skipped: 0 } }), base)?.verdict).toBe(
      'red_before',
    );
    expect(compareWithBase(result({ tests: { passed: 4, failed: 3, skipped: 0 } }), base)?.verdict).toBe(
      'worse',
    );
    expect(compareWithBase(result(), result())?.verdict).toBe('worse');
    // Names on the base but none now (the suite no longer loads): worse, whatever the exit code.
    expect(compareWithBase(result({ tests: { passed: 0, failed: 1, skipped: 0 } }), redBase)?.verdict).toBe(
      'worse',
    );
    expect(compareWithBase(result({ status: 'timeout', exitCode: null }), redBase)?.verdict).toBe('worse');
  });

  it('a check the base did not have (another name or command) is not compared', () => {
    const baseline: Baseline = { baseSha: 'b'.repeat(40), dod: dod([redBase]) };
    const compared = withBaseline(dod([result({ command: 'npm run test:all' })]), baseline);
    expect(compared.results[0]?.base).toBeUndefined();
  });
});

function dod(results: DodCheckResult[]): DodOutcome {
  return {
    status: results.every((item) => item.status === 'passed') ? 'passed' : 'failed',
    results,
    ranOnDirtyTree: false,
    source: 'config',
  };
}

const facts: TaskFacts = cleanFacts('h'.repeat(40), {
  baseSha: 'b'.repeat(40),
  taskBranch: { name: 'agent-runner/T-1', headSha: 'h'.repeat(40) },
  commits: [{ sha: 'h'.repeat(40), subject: 'Add the feature' }],
});

function gate(now: DodCheckResult[], extra: Partial<GateInput> = {}): GateInput {
  const baseline: Baseline = { baseSha: 'b'.repeat(40), dod: dod([redBase]) };
  return {
    criteria: [{ id: 'AC1', description: 'feature', type: 'functional', critical: true }],
    assessment: {
      allCriteriaSatisfied: true,
      summary: 'done',
      byCriterion: [{ id: 'AC1', status: 'passed', comment: '' }],
      retrospective: [],
    },
    facts,
    dod: withBaseline(dod(now), baseline),
    criteriaChecks: [
      {
        criterionId: 'AC1',
        critical: true,
        kind: 'command',
        target: 'node --test test/feature.test.js',
        status: 'passed',
        exitCode: 0,
        durationMs: 1,
        outputTail: '',
        reason: '',
        ranOnDirtyTree: false,
      },
    ],
    dodSkipped: false,
    checkedHead: facts.headSha,
    baseline,
    ...extra,
  };
}

describe('the completion gate with a baseline', () => {
  it('no_worse: a check red before any change and not worse does not refuse; the basis says the base was red', () => {
    const input = gate([result({ failingTests: ['old bug'] })]);
    expect(gateRefusals(input)).toEqual([]);
    const basis = decisionBasis(input).join('\n');
    expect(basis).toContain('test failed: red before any change (on the base too), not worse');
    expect(basis).toContain('Baseline: red before any change on the base (bbbbbbbbbbbb): test.');
  });

  it('worse than on the base, or broken by this task: refused, with the new failures named', () => {
    expect(gateRefusals(gate([result({ failingTests: ['old bug', 'new break'] })]))).toEqual([
      { code: 'dod_failing', checks: ['test'] },
    ]);
    const input = gate([result({ failingTests: ['old bug', 'new break'] })]);
    expect(decisionBasis(input).join('\n')).toContain(
      'worse than on the base: new break fail now, not on the base',
    );
    const green: Baseline = {
      baseSha: 'b'.repeat(40),
      dod: dod([result({ status: 'passed', exitCode: 0 })]),
    };
    expect(gateRefusals({ ...gate([]), dod: withBaseline(dod([result()]), green), baseline: green })).toEqual(
      [{ code: 'dod_failing', checks: ['test (broken by this task)'] }],
    );
  });

  it('must_pass: the red check refuses as without a baseline', () => {
    expect(gateRefusals(gate([result({ failingTests: ['old bug'] })], { redBase: 'must_pass' }))).toEqual([
      { code: 'dod_failing', checks: ['test'] },
    ]);
  });

  it('a red check that is not worse is no pass: without another passing check there is no evidence', () => {
    const refusals = gateRefusals(gate([result({ failingTests: ['old bug'] })], { criteriaChecks: [] }));
    expect(refusals).toEqual([{ code: 'no_executable_evidence', dodChecks: 1 }]);
    expect(refusalMessage(refusals[0]!)).toContain(
      'none of the 1 Definition-of-Done check(s) passed on the committed tree',
    );
  });
});

describe('the baseline in the loop', () => {
  const plan = {
    title: 'Add the feature',
    acceptanceCriteria: [
      {
        id: 'AC1',
        description: 'the feature works',
        type: 'functional' as const,
        critical: true,
        check: { kind: 'command' as const, command: 'node --test test/feature.test.js' },
      },
    ],
  };

  async function runWith(repo: FakeRepo, redBasePolicy: 'no_worse' | 'must_pass', previous?: Baseline) {
    const events: StampedEvent[] = [];
    const notes: TaskRecord[] = [];
    const runner = new TaskRunner(
      await testRunnerOptions({
        baseline: { mode: 'auto', redBase: redBasePolicy },
        ...(previous
          ? {
              previous: {
                plan,
                runs: [],
                threadId: null,
                metaCalls: 1,
                usage: {
                  inputTokens: 0,
                  cachedInputTokens: 0,
                  outputTokens: 0,
                  reasoningTokens: 0,
                  costUsd: 0,
                },
                baseline: previous,
              },
            }
          : {}),
      }),
      testRunnerDeps(
        repo,
        {
          meta: new ScriptedMetaAgent([
            ...(previous ? [] : [{ kind: 'plan' as const, plan }]),
            runWorkerStep(),
            assessStep(true),
            runWorkerStep(),
            assessStep(true),
          ]),
          worker: new FakeWorker(repo, [
            (state) => {
              state.commits.push({ sha: 'c1', subject: 'Add the feature' });
              state.commandExits['node --test test/feature.test.js'] = 0;
            },
            () => undefined,
          ]),
          workspace: new FakeWorkspace(repo),
        },
        { events, notes },
      ),
    );
    return { summary: await runner.run(), events, notes };
  }

  it('runs once on the base beside planning; a red base not made worse ends COMPLETE and the note has it', async () => {
    const repo = fakeRepo();
    repo.failingTests = ['old bug'];
    const { summary, events, notes } = await runWith(repo, 'no_worse');
    const baselines = events.filter((event) => event.type === 'baseline');
    expect(baselines).toHaveLength(1);
    // Before any worker run.
    expect(events.findIndex((event) => event.type === 'baseline')).toBeLessThan(
      events.findIndex((event) => event.type === 'worker_started'),
    );
    expect(summary.state).toBe('COMPLETE');
    const dodEvent = events.filter((event) => event.type === 'dod').at(-1);
    expect(dodEvent?.type === 'dod' && dodEvent.dod.results[0]?.base?.verdict).toBe('red_before');
    expect(notes.at(-1)?.baseline?.dod.results[0]?.failingTests).toEqual(['old bug']);
    expect(repo.dodRuns).toBe(2);
  });

  it('must_pass: the same task is never complete', async () => {
    const repo = fakeRepo();
    repo.failingTests = ['old bug'];
    const { summary } = await runWith(repo, 'must_pass');
    expect(summary.state).not.toBe('COMPLETE');
  });

  it("on resume the first attempt's baseline is compared with, and the base is not run again", async () => {
    const repo = fakeRepo();
    repo.failingTests = ['old bug'];
    const previous: Baseline = {
      baseSha: 'base000000',
      dod: dod([result({ failingTests: ['old bug'], outputTail: 'failed' })]),
    };
    const { summary, events } = await runWith(repo, 'no_worse', previous);
    expect(events.filter((event) => event.type === 'baseline')).toHaveLength(0);
    expect(summary.state).toBe('COMPLETE');
    // The resumed task's first look at the work, and the validation after its run: none on the base.
    expect(repo.dodRuns).toBe(2);
  });
});
