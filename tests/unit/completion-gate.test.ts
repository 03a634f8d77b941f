import { describe, expect, it } from 'vitest';
import {
  closingReason,
  completionRefusals,
  decisionBasis,
  gateRefusals,
  onlyEvidenceMissing,
  type GateInput,
} from '../../src/core/completion-gate.js';
import { evidenceFingerprint } from '../../src/core/evidence-fingerprint.js';
import type { CriterionCheckResult, DodOutcome, TaskFacts } from '../../src/core/types.js';

const facts: TaskFacts = {
  baseSha: 'b',
  headSha: 'h',
  taskBranch: { name: 'agent-runner/T-1', headSha: 'h' },
  commits: [{ sha: 'h', subject: 'Add slugify' }],
  dirty: false,
  uncommitted: [],
  changedFiles: ['src/slug.js'],
  diffStat: '1 file changed',
  diff: '',
  scopeViolations: [],
};
const dod: DodOutcome = {
  status: 'passed',
  results: [
    { name: 'test', command: 'npm test', status: 'passed', exitCode: 0, durationMs: 5, outputTail: '' },
  ],
  ranOnDirtyTree: false,
  source: 'config',
};
const good: GateInput = {
  criteria: [
    { id: 'AC1', description: 'a', type: 'functional', critical: true },
    { id: 'AC2', description: 'b', type: 'quality', critical: false },
  ],
  assessment: {
    allCriteriaSatisfied: true,
    summary: 'done',
    byCriterion: [
      { id: 'AC1', status: 'passed', comment: '' },
      { id: 'AC2', status: 'unknown', comment: '' },
    ],
    retrospective: [],
  },
  facts,
  dod,
  dodSkipped: false,
  checkedHead: 'h',
};

const check = (overrides: Partial<CriterionCheckResult> = {}): CriterionCheckResult => ({
  criterionId: 'AC1',
  critical: true,
  kind: 'command',
  target: 'npm run e2e',
  status: 'passed',
  exitCode: 0,
  durationMs: 10,
  outputTail: '',
  reason: '',
  ranOnDirtyTree: false,
  ...overrides,
});
const noDod: DodOutcome = { status: 'none', results: [], ranOnDirtyTree: false, source: 'detected: nothing' };

describe('completion gate', () => {
  it('passes when assessment and facts agree', () => {
    expect(completionRefusals(good)).toEqual([]);
  });

  it.each<[string, Partial<GateInput>, RegExp]>([
    [
      'assessment unsatisfied',
      { assessment: { ...good.assessment!, allCriteriaSatisfied: false } },
      /not every criterion/,
    ],
    [
      'critical criterion failed',
      { assessment: { ...good.assessment!, byCriterion: [{ id: 'AC1', status: 'failed', comment: '' }] } },
      /critical criterion AC1 is failed/,
    ],
    ['no commits', { facts: { ...facts, commits: [] } }, /no commit/],
    ['dirty tree', { facts: { ...facts, dirty: true, uncommitted: [' M a'] } }, /not clean/],
    [
      'scope violation',
      { facts: { ...facts, scopeViolations: ['package.json'] } },
      /scope violations: package.json/,
    ],
    [
      'facts incomplete',
      {
        facts: {
          ...facts,
          problems: ['refusing to read /r/.git: refs/heads/planted is a symlink or a special file'],
        },
      },
      /the facts are incomplete: refusing to read \/r\/.git: refs\/heads\/planted is a symlink/,
    ],
    [
      'DoD failed',
      { dod: { ...dod, status: 'failed', results: [{ ...dod.results[0]!, status: 'failed' }] } },
      /DoD checks failing: test/,
    ],
    ['DoD on dirty tree', { dod: { ...dod, ranOnDirtyTree: true } }, /dirty tree/],
    ['DoD never ran', { dod: undefined }, /have not run/],
    ['no assessment', { assessment: undefined }, /no completion assessment/],
  ])('refuses when %s', (_name, change, reason) => {
    const reasons = completionRefusals({ ...good, ...change });
    expect(reasons.join('\n')).toMatch(reason);
  });

  it('a critical criterion whose check failed blocks COMPLETE, whatever the assessment says', () => {
    const reasons = completionRefusals({
      ...good,
      criteriaChecks: [check({ status: 'failed', exitCode: 2 })],
    });
    expect(reasons).toEqual(['critical criterion AC1: its check command `npm run e2e` failed, exit 2']);
  });

  it('a non-critical failing check or a check that was not executed does not block by itself', () => {
    const checks = [
      check({ criterionId: 'AC2', critical: false, status: 'failed', exitCode: 1 }),
      check({ kind: 'playwright', status: 'not_executed', exitCode: null }),
    ];
    expect(completionRefusals({ ...good, criteriaChecks: checks })).toEqual([]);
  });

  it('no evidence, no COMPLETE: no DoD check and no passing criterion check', () => {
    const reasons = completionRefusals({
      ...good,
      dod: noDod,
      criteriaChecks: [check({ status: 'not_executed' })],
    });
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatch(/^no executable evidence: /);
    const coded = gateRefusals({ ...good, dod: noDod, criteriaChecks: [check({ status: 'not_executed' })] });
    expect(onlyEvidenceMissing(coded)).toBe(true);
    expect(onlyEvidenceMissing([{ code: 'no_commit' }, ...coded])).toBe(false);
  });

  it('a passing criterion check on a clean tree is evidence without a DoD; on a dirty tree it is not', () => {
    expect(completionRefusals({ ...good, dod: noDod, criteriaChecks: [check()] })).toEqual([]);
    const dirty = completionRefusals({
      ...good,
      dod: noDod,
      criteriaChecks: [check({ ranOnDirtyTree: true })],
    });
    expect(dirty.join()).toMatch(/no executable evidence/);
  });

  it('says what the decision rests on', () => {
    const basis = decisionBasis({
      ...good,
      criteriaChecks: [
        check(),
        check({
          criterionId: 'AC2',
          kind: 'manual',
          status: 'not_executed',
          exitCode: null,
          target: 'manual',
        }),
      ],
    });
    expect(basis).toEqual([
      'Assessment: every criterion satisfied (1/2 passed).',
      'Facts: 1 commit(s) on the task branch (head h), clean tree, no scope violation.',
      'Definition of Done: 1/1 check(s) passed (test passed).',
      'Criteria checks: 1/1 executed check(s) passed; AC1 command `npm run e2e` passed, exit 0; AC2 manual `manual` not_executed.',
      'Executable evidence: DoD test, AC1 command check.',
    ]);
  });

  it('accepts skipped DoD when the user asked for it', () => {
    expect(completionRefusals({ ...good, dod: undefined, dodSkipped: true })).toEqual([]);
  });
});

describe('completion gate: the branch, not a shadow of it', () => {
  const HEAD = '2222222222222222222222222222222222222222';
  const BASE = '1111111111111111111111111111111111111111';
  const PENDING = 'refs/agent-runner/pending/T-1';
  const WHY =
    "the worktree /r/.agent-runner/worktrees/T-1 could not be updated to it (git: error: cannot stat 'nnnn…': File name too long)";
  /** Two commits of the worker whose head is on the pending ref; the task branch is still at the base. */
  const shadowed: TaskFacts = {
    ...facts,
    baseSha: BASE,
    headSha: HEAD,
    commits: [
      { sha: HEAD, subject: 'Add a file no checkout can hold' },
      { sha: '3333333333333333333333333333333333333333', subject: 'Add slugify' },
    ],
    taskBranch: { name: 'agent-runner/T-1', headSha: BASE },
    pendingRef: PENDING,
    pendingReason: WHY,
  };
  const input: GateInput = { ...good, facts: shadowed, checkedHead: HEAD };

  it('refuses when the task branch does not hold the head the checks ran on, naming the branch, where it is, the pending ref and why', () => {
    expect(gateRefusals(input)).toEqual([
      {
        code: 'work_not_on_branch',
        head: HEAD,
        branch: { name: 'agent-runner/T-1', headSha: BASE },
        pendingRef: PENDING,
        reason: WHY,
      },
    ]);
    expect(completionRefusals(input)).toEqual([
      `the work is not on the task branch: agent-runner/T-1 is at 111111111111; the worker's head 222222222222 is kept at ${PENDING} (${WHY}); look at it with \`git log ${PENDING}\``,
    ]);
  });

  it('refuses when where the task branch points was not observed', () => {
    const { taskBranch: _unobserved, ...withoutBranch } = facts;
    expect(completionRefusals({ ...good, facts: withoutBranch })).toEqual([
      "where the task branch points was not observed, so the worker's head h is not known to be on it",
    ]);
  });

  it('refuses when the checks ran on another checkout, or it moved while they ran', () => {
    expect(completionRefusals({ ...good, checkedHead: 'other' })).toEqual([
      "the DoD and criteria checks did not run on the worker's head h: the sandbox had other checked out",
    ]);
    expect(completionRefusals({ ...good, checkedHead: null })).toEqual([
      "the DoD and criteria checks did not run on the worker's head h: the sandbox had another commit checked out, or its checkout moved while they ran",
    ]);
  });

  it('the basis never counts commits as on the task branch when it does not hold them', () => {
    const basis = decisionBasis({ ...input, checkedHead: null });
    expect(basis.join('\n')).not.toMatch(/on the task branch \(/);
    expect(basis[1]).toBe(
      `Facts: 2 commit(s) since the base, but the work is not on the task branch: agent-runner/T-1 is at 111111111111; the worker's head 222222222222 is kept at ${PENDING} (${WHY}); look at it with \`git log ${PENDING}\`; clean tree, no scope violation.`,
    );
    expect(basis[2]).toBe(
      "Checks: the DoD and criteria checks did not run on the worker's head 222222222222: the sandbox had another commit checked out, or its checkout moved while they ran.",
    );
  });

  it('a closing reason names the pending ref and how to look at it, once', () => {
    const closing = closingReason('limit: at most 1 worker run(s)', shadowed);
    expect(closing).toMatch(/^limit: at most 1 worker run\(s\); the work is not on the task branch: /);
    expect(closing).toContain(`\`git log ${PENDING}\``);
    expect(closingReason(closing, shadowed)).toBe(closing);
    expect(closingReason('slugify done', facts)).toBe('slugify done');
    expect(closingReason('interrupted', undefined)).toBe('interrupted');
  });

  it('the evidence fingerprint ties the results to the commit they ran on', () => {
    expect(evidenceFingerprint(facts, dod, [], 'h')).not.toBe(evidenceFingerprint(facts, dod, [], null));
    expect(evidenceFingerprint(facts, dod, [], 'h')).toBe(evidenceFingerprint(facts, dod, [], 'h'));
  });
});
