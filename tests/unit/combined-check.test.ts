import { describe, expect, it } from 'vitest';
import type { DodOutcome } from '../../src/core/types.js';
import {
  combinedLine,
  combinedPassed,
  combinedReport,
  combinedStatus,
  failedCriteria,
} from '../../src/parallel/combined-check.js';
import { changedWork, fixupEvidence } from '../../src/parallel/fixup-review.js';
import type {
  CombinedCheck,
  PlannedSubtask,
  SubtaskCriterionCheck,
} from '../../src/parallel/project-events.js';

const dod = (status: DodOutcome['status']): DodOutcome => ({
  status,
  results:
    status === 'none'
      ? []
      : [
          {
            name: 'test',
            command: 'npm test',
            status: status === 'passed' ? 'passed' : 'failed',
            exitCode: status === 'passed' ? 0 : 1,
            durationMs: 5,
            outputTail: status === 'passed' ? '' : 'not ok 1 - b is the only feature',
          },
        ],
  ranOnDirtyTree: false,
  source: 'package.json',
});

const criterion = (
  subtask: string,
  status: SubtaskCriterionCheck['status'],
  critical = true,
): SubtaskCriterionCheck => ({
  subtask,
  criterionId: 'AC-1',
  critical,
  kind: 'command',
  target: `node --test test/${subtask}.test.js`,
  status,
  exitCode: status === 'passed' ? 0 : status === 'failed' ? 1 : null,
  durationMs: 3,
  outputTail: status === 'failed' ? 'ENOENT test/a.test.js' : '',
  reason: status === 'not_executed' ? 'kind manual' : '',
  ranOnDirtyTree: false,
});

const check = (status: DodOutcome['status'], criteria: SubtaskCriterionCheck[]): CombinedCheck => ({
  subtask: 'beta + fix-up',
  headSha: 'c'.repeat(40),
  dod: dod(status),
  criteria,
});

describe('the combined check', () => {
  it('a critical criterion that fails on the combined tree makes it red though the DoD passed', () => {
    const red = check('passed', [criterion('alpha', 'failed'), criterion('beta', 'passed')]);
    expect(combinedPassed(red)).toBe(false);
    expect(combinedStatus(red)).toBe('failed');
    expect(failedCriteria(red).map((result) => result.subtask)).toEqual(['alpha']);
    expect(combinedReport(red)).toBe(
      '- subtask `alpha`, criterion AC-1: `node --test test/alpha.test.js` failed (exit 1):\nENOENT test/a.test.js',
    );
    expect(combinedLine(red)).toBe('failed (test passed, alpha AC-1 failed, beta AC-1 passed)');
  });

  it('a check that timed out blocks too; one not critical, not executed or not executable does not', () => {
    expect(combinedPassed(check('passed', [criterion('alpha', 'timeout')]))).toBe(false);
    const shown = check('passed', [
      criterion('alpha', 'failed', false),
      criterion('beta', 'not_executed'),
      criterion('gamma', 'not_executable'),
    ]);
    expect(combinedPassed(shown)).toBe(true);
    expect(combinedLine(shown)).toContain('alpha AC-1 failed (not critical)');
  });

  it('a red DoD is red; no DoD at all (none, skipped) with passing criteria passes; an old journal has no criteria', () => {
    expect(combinedPassed(check('failed', [criterion('alpha', 'passed')]))).toBe(false);
    expect(combinedReport(check('failed', []))).toContain('`npm test` failed (exit 1):\nnot ok 1');
    expect(combinedPassed(check('none', [criterion('alpha', 'passed')]))).toBe(true);
    expect(combinedPassed(check('skipped', []))).toBe(true);
    const old: CombinedCheck = { subtask: 'alpha', headSha: 'a'.repeat(40), dod: dod('passed') };
    expect(combinedPassed(old)).toBe(true);
    expect(combinedLine(old)).toBe('passed (test passed)');
  });
});

describe("a fix-up's review evidence", () => {
  const planned = (id: string, writeScope: string[]): PlannedSubtask => ({
    id,
    title: id,
    prd: id,
    plan: { title: id, acceptanceCriteria: [] },
    writeScope,
    readScope: [],
    blockedBy: [],
  });
  const subtasks = [
    planned('alpha', ['features/a.js', 'test/a.test.js']),
    planned('beta', ['features/b.js']),
  ];

  it("names each subtask whose work it changed, deletions first, by the subtasks' write scopes", () => {
    const changes = [
      { status: 'M', path: 'test/a.test.js' },
      { status: 'D', path: 'features/a.js' },
      { status: 'R', path: 'lib/b.js', from: 'features/b.js' },
      { status: 'A', path: 'README.md' },
    ];
    expect(changedWork(changes, subtasks)).toEqual([
      {
        subtask: 'alpha',
        changes: [
          { status: 'D', path: 'features/a.js' },
          { status: 'M', path: 'test/a.test.js' },
        ],
      },
      { subtask: 'beta', changes: [{ status: 'R', path: 'lib/b.js', from: 'features/b.js' }] },
    ]);
    const evidence = fixupEvidence({
      fixupTaskId: 'P--fixup-1',
      summary: {
        taskId: 'P--fixup-1',
        title: 'fix',
        state: 'COMPLETE',
        reason: 'done',
        branch: 'agent-runner/P--fixup-1',
        headSha: 'f'.repeat(40),
        notePath: null,
        worktreePath: null,
        runs: 1,
        metaCalls: 2,
        usage: {
          meta: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 },
          worker: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 },
          total: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 },
        },
        durationMs: 1,
        exitCode: 0,
        error: null,
        basis: [],
        criteria: [],
      },
      changes,
      diff: 'diff --git a/features/a.js b/features/a.js\ndeleted file mode 100644',
      subtasks,
    });
    expect(evidence.summary).toContain(
      'changed the work of 2 merged subtask(s), and DELETED 1 of their file(s)',
    );
    expect(evidence.summary).toContain(
      '- subtask alpha: deleted features/a.js, modified test/a.test.js\n- subtask beta: renamed features/b.js -> lib/b.js',
    );
    expect(evidence.diff).toContain('deleted file mode');
  });

  it('says so when it changed nothing of any subtask', () => {
    expect(changedWork([{ status: 'A', path: 'docs/x.md' }], subtasks)).toEqual([]);
  });
});
