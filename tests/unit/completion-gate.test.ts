import { describe, expect, it } from 'vitest';
import { completionRefusals, type GateInput } from '../../src/core/completion-gate.js';
import type { DodOutcome, TaskFacts } from '../../src/core/types.js';

const facts: TaskFacts = {
  baseSha: 'b',
  headSha: 'h',
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
};

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

  it('accepts skipped DoD when the user asked for it', () => {
    expect(completionRefusals({ ...good, dod: undefined, dodSkipped: true })).toEqual([]);
  });
});
