/**
 * A base that is already red, end to end (real CLI, codex and sandbox; a scripted model): the project's own
 * tests fail on one test before any change. The DoD runs once on the base beside planning (the baseline); a task
 * that adds its feature without touching that test ends COMPLETE on its own criterion's check, and the note
 * and --json say the base was red, with counts and the failing test named; a task that breaks a test that was
 * green on the base is refused with "broken by this task".
 */
import { describe, expect, it } from 'vitest';
import { realProjectRepo, runRealProject, type RealProjectRun } from '../support/real-project-run.js';

const BASE_FILES = {
  'package.json': `${JSON.stringify({ name: 'red-base', version: '1.0.0', private: true, scripts: { test: 'node --test' } }, null, 2)}\n`,
  'lib.js':
    'exports.double = (n) => n * 2;\nexports.half = (n) => n / 3; // the old bug: red before any change\n',
  'test/lib.test.js': `const test = require('node:test');
const assert = require('node:assert');
const { double, half } = require('../lib.js');
test('double', () => assert.strictEqual(double(2), 4));
test('half', () => assert.strictEqual(half(6), 3));
`,
};

const FEATURE = {
  'triple.js': 'exports.triple = (n) => n * 3;\n',
  'test/triple.test.js': `const test = require('node:test');
const assert = require('node:assert');
const { triple } = require('../triple.js');
test('triple', () => assert.strictEqual(triple(2), 6));
`,
};

const CRITERIA = [
  {
    id: 'AC-1',
    description: 'triple(n) returns 3n, with a test.',
    type: 'test',
    critical: true,
    check: { kind: 'command', command: 'node --test test/triple.test.js' },
  },
];

function lastEvent(run: RealProjectRun, type: string): Record<string, unknown> | undefined {
  return run.events.filter((event) => event.type === type).at(-1);
}

describe('real projects: a base that is already red', () => {
  it('a feature that leaves the old failure alone: COMPLETE, the note says the base was red', async () => {
    const root = realProjectRepo('rp-red', BASE_FILES);
    const run = await runRealProject(root, `rp-red-${Date.now()}`, FEATURE, [], { criteria: CRITERIA });
    expect(run.summary?.state, `${JSON.stringify(run.summary)}\n${run.stderr}`).toBe('COMPLETE');
    const baseline = lastEvent(run, 'baseline') as
      { dod: { results: { status: string; failingTests?: string[]; tests?: unknown }[] } } | undefined;
    expect(baseline?.dod.results).toMatchObject([
      { status: 'failed', failingTests: ['half'], tests: { passed: 1, failed: 1, skipped: 0 } },
    ]);
    // Before the first worker run, beside planning.
    const order = run.events.map((event) => event.type);
    expect(order.indexOf('baseline')).toBeLessThan(order.indexOf('worker_started'));
    const dod = lastEvent(run, 'dod') as
      { dod: { results: { status: string; base?: { verdict: string }; tests?: unknown }[] } } | undefined;
    expect(dod?.dod.results[0]).toMatchObject({
      status: 'failed',
      base: { verdict: 'red_before' },
      tests: { passed: 2, failed: 1, skipped: 0 },
    });
    expect(run.note).toContain('red before any change (on the base too), not worse');
    expect(run.note).toContain('**Baseline**');
    expect(run.note).toMatch(/\| Base \| .*\*\*red before any change\*\*: test/);
    expect(run.note).toContain('`half`');
    expect(run.note).toContain('1 passed, 1 failed');
    expect(run.note).not.toContain('\u001b');
  });

  it('a change that breaks a test green on the base: refused as broken by this task', async () => {
    const root = realProjectRepo('rp-broken', BASE_FILES);
    const run = await runRealProject(
      root,
      `rp-broken-${Date.now()}`,
      { ...FEATURE, 'lib.js': 'exports.double = (n) => n * 3;\nexports.half = (n) => n / 3;\n' },
      [],
      {
        criteria: CRITERIA,
        then: [
          {
            type: 'next_action',
            version: 1,
            payload: { decision: { action: 'abort', reason: 'The change broke double.' }, used_patterns: [] },
          },
        ],
      },
    );
    expect(run.summary?.state, `${JSON.stringify(run.summary)}\n${run.stderr}`).toBe('FAILED');
    const dod = lastEvent(run, 'dod') as
      { dod: { results: { base?: { verdict: string; newFailures?: string[] } }[] } } | undefined;
    expect(dod?.dod.results[0]?.base).toMatchObject({ verdict: 'worse', newFailures: ['double'] });
    const refused = lastEvent(run, 'refused') as { reasons: string[] } | undefined;
    expect(refused?.reasons.join('\n')).toContain('DoD checks failing: test');
    expect(run.note).toContain('worse than on the base: double fail now, not on the base');
  });
  it("a lint red on the base (git's whitespace check): not worse while the task adds no problem, COMPLETE", async () => {
    const root = realProjectRepo('rp-red-lint', {
      ...BASE_FILES,
      // The old bug fixed: only the lint is red on the base.
      'lib.js': 'exports.double = (n) => n * 2;\nexports.half = (n) => n / 2;\n',
      'style.js': 'exports.style = 1;   \n',
      'agent-runner.yaml': [
        'dod:',
        '  checks:',
        '    - name: test',
        '      command: node --test',
        '    - name: whitespace',
        // Every whitespace problem of the committed tree, against the empty tree: "style.js:1: trailing whitespace."
        '      command: git diff --check 4b825dc642cb6eb9a060e54bf8d69288fbee4904 HEAD',
        '',
      ].join('\n'),
    });
    const run = await runRealProject(root, `rp-red-lint-${Date.now()}`, FEATURE, [], { criteria: CRITERIA });
    expect(run.summary?.state, `${JSON.stringify(run.summary)}\n${run.stderr}`).toBe('COMPLETE');
    const baseline = lastEvent(run, 'baseline') as
      { dod: { results: { name: string; status: string; failingTests?: string[] }[] } } | undefined;
    expect(baseline?.dod.results.find((result) => result.name === 'whitespace')).toMatchObject({
      status: 'failed',
      failingTests: ['style.js: trailing whitespace.'],
    });
    const dod = lastEvent(run, 'dod') as
      { dod: { results: { name: string; status: string; base?: { verdict: string } }[] } } | undefined;
    expect(dod?.dod.results.find((result) => result.name === 'whitespace')).toMatchObject({
      status: 'failed',
      base: { verdict: 'red_before' },
    });
    expect(run.note).toContain('red before any change (on the base too), not worse');
  });
});
