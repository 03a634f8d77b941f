import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testCountsText } from '../../src/core/test-counts.js';
import {
  MAX_COUNT,
  PARSED_CHARS,
  parseFailingTests,
  parseTestCounts,
  passedTestCount,
  readCheckOutput,
} from '../../src/workspace/checks/test-counts.js';

/** Real output of the runners installed here (tests/unit/fixtures/test-output/README.md says how it was made). */
const sample = (name: string) =>
  readFileSync(new URL(`./fixtures/test-output/${name}`, import.meta.url), 'utf8');

const ESC = '\u001b';

describe('parseTestCounts on real runner output', () => {
  it.each([
    ['vitest.txt', { passed: 2, failed: 1, skipped: 1 }],
    ['vitest-color.txt', { passed: 2, failed: 1, skipped: 1 }],
    ['node-test-spec.txt', { passed: 2, failed: 1, skipped: 1 }],
    ['node-test-spec-color.txt', { passed: 2, failed: 1, skipped: 1 }],
    ['node-test-tap.txt', { passed: 2, failed: 1, skipped: 1 }],
    ['pytest.txt', { passed: 1, failed: 1, skipped: 1 }],
    ['pytest-color.txt', { passed: 1, failed: 1, skipped: 1 }],
    ['cargo-test-color.txt', { passed: 1, failed: 1, skipped: 1 }],
    // Two result lines (the library's tests and its doc-tests) add up.
    ['cargo-test-pass.txt', { passed: 2, failed: 0, skipped: 1 }],
  ])('%s', (name, counts) => {
    const output = sample(name);
    // The coloured samples really are coloured: the parser has sequences to see through.
    if (name.includes('color')) expect(output).toContain(ESC);
    expect(parseTestCounts(output)).toEqual(counts);
  });
});

describe('parseTestCounts on documented formats (runners not installed here)', () => {
  it('a workspace run (pnpm -r test): one vitest summary per package, added up', () => {
    const output = [
      'packages/math test:       Tests  2 passed (2)',
      'packages/math test: Done',
      'packages/strings test:       Tests  1 failed | 1 passed (2)',
    ].join('\n');
    // pnpm prefixes each line with the package and the script (turbo with `name:script: `).
    expect(parseTestCounts(output)).toEqual({ passed: 3, failed: 1, skipped: 0 });
    expect(parseTestCounts('math:test:       Tests  2 passed (2)\n')).toEqual({
      passed: 2,
      failed: 0,
      skipped: 0,
    });
    // cargo's own summary is not a prefix.
    expect(
      parseTestCounts('test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n'),
    ).toEqual({
      passed: 2,
      failed: 0,
      skipped: 0,
    });
    expect(parseTestCounts('      Tests  2 passed (2)\n\n      Tests  1 failed | 1 passed (2)\n')).toEqual({
      passed: 3,
      failed: 1,
      skipped: 0,
    });
  });

  it('jest', () => {
    const output = [
      'Test Suites: 1 failed, 1 passed, 2 total',
      'Tests:       1 failed, 4 skipped, 3 passed, 8 total',
      'Snapshots:   0 total',
      'Time:        1.02 s',
    ].join('\n');
    expect(parseTestCounts(output)).toEqual({ passed: 3, failed: 1, skipped: 4 });
  });

  it('mocha', () => {
    const output = [
      '  12 passing (35ms)',
      '  2 pending',
      '  1 failing',
      '',
      '  1) suite',
      '     fails:',
    ].join('\n');
    expect(parseTestCounts(output)).toEqual({ passed: 12, failed: 1, skipped: 2 });
  });

  it('go test -v', () => {
    const output = [
      '=== RUN   TestAdd',
      '--- PASS: TestAdd (0.00s)',
      '=== RUN   TestSub',
      '    --- PASS: TestSub/neg (0.00s)',
      '--- FAIL: TestSub (0.00s)',
      '--- SKIP: TestSlow (0.00s)',
      'FAIL',
      'FAIL\texample.com/calc\t0.003s',
    ].join('\n');
    expect(parseTestCounts(output)).toEqual({ passed: 2, failed: 1, skipped: 1 });
  });

  it('pytest with errors and deselected tests', () => {
    expect(parseTestCounts('===== 3 passed, 1 error, 2 deselected in 0.11s =====')).toEqual({
      passed: 3,
      failed: 1,
      skipped: 0,
    });
  });
});

describe('parseTestCounts treats output as data', () => {
  it('finds no counts where no runner summarised', () => {
    expect(parseTestCounts('')).toBeNull();
    expect(parseTestCounts('build ok\nwrote dist/index.js')).toBeNull();
    // go test without -v names packages, not tests.
    expect(parseTestCounts('ok  \texample.com/calc\t0.002s')).toBeNull();
    // "Test Files" is vitest's count of files, not of tests.
    expect(parseTestCounts(' Test Files  3 passed (3)')).toBeNull();
  });

  it('drops an absurd count rather than showing it', () => {
    expect(parseTestCounts(`# pass ${MAX_COUNT + 1}\n# fail 0`)).toBeNull();
    expect(parseTestCounts('      Tests  99999999999999999999 passed (1)')).toBeNull();
    expect(parseTestCounts(`# pass ${MAX_COUNT}\n# fail 1`)).toBeNull();
    expect(parseTestCounts(`# pass ${MAX_COUNT}\n# fail 0`)).toEqual({
      passed: MAX_COUNT,
      failed: 0,
      skipped: 0,
    });
  });

  it('reads only the end of a huge output, in bounded time', () => {
    const flood = `${'      Tests  7 passed (7)\n'.repeat(10)}${'x'.repeat(PARSED_CHARS)}\n`;
    expect(parseTestCounts(flood)).toBeNull();
    const lines = `${'1 '.repeat(200_000)}\n`.repeat(20) + '  3 passing (1ms)\n';
    const started = Date.now();
    expect(parseTestCounts(lines)).toEqual({ passed: 3, failed: 0, skipped: 0 });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('does not take a word inside another for a count', () => {
    // A line of node's reporter is `ℹ pass N`: "Tests 1" must not be read as a count.
    expect(parseTestCounts('      Tests 1 failed | 2 passed (3)')).toEqual({
      passed: 2,
      failed: 1,
      skipped: 0,
    });
  });
});

describe('testCountsText', () => {
  it('names passed always and failed and skipped when there are some', () => {
    expect(testCountsText({ passed: 42, failed: 0, skipped: 1 })).toBe('42 passed, 1 skipped');
    expect(testCountsText({ passed: 0, failed: 3, skipped: 0 })).toBe('0 passed, 3 failed');
    expect(testCountsText({ passed: 5, failed: 0, skipped: 0 })).toBe('5 passed');
  });
});

describe('parseTestCounts on pytest -q', () => {
  it('reads the undecorated summary line (real pytest 9 output), and no other line of that shape', () => {
    const output =
      '.                                                                        [100%]\n1 passed, 1 deselected in 2.30s\n';
    expect(parseTestCounts(output)).toEqual({ passed: 1, failed: 0, skipped: 0 });
    expect(parseTestCounts('3 failed, 2 passed in 0.41s')).toEqual({ passed: 2, failed: 3, skipped: 0 });
    // A line of that shape whose first word pytest does not count is not its summary.
    expect(parseTestCounts('12 packages in 1.5s')).toBeNull();
  });
});

describe('passedTestCount: the count a named test is decided on', () => {
  it('counts passed tests in each framework output', () => {
    expect(passedTestCount('vitest', ' Tests  2 passed | 3 skipped (5)')).toBe(2);
    expect(passedTestCount('jest', 'Tests:       4 skipped, 1 passed, 5 total')).toBe(1);
    expect(passedTestCount('mocha', '  1 passing (3ms)')).toBe(1);
    expect(passedTestCount('node:test', '# tests 1\n# pass 1\n')).toBe(1);
    expect(passedTestCount('node:test', 'ℹ tests 1\nℹ pass 0\n')).toBe(0);
    expect(passedTestCount('pytest', '==== 1 passed, 2 deselected in 0.01s ====')).toBe(1);
    expect(passedTestCount('pytest', '1 passed, 1 deselected in 0.02s')).toBe(1);
    expect(passedTestCount('go test', '=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\nok  \tx\t0.1s')).toBe(1);
    expect(passedTestCount('cargo test', 'test result: ok. 1 passed; 0 failed; 0 ignored')).toBe(1);
  });

  it("reads only the framework's own summary line, coloured or not", () => {
    expect(passedTestCount('vitest', '==== 3 passed in 0.01s ====')).toBeNull();
    expect(passedTestCount('pytest', '      Tests  3 passed (3)')).toBeNull();
    // A test's own output that says "passed" is not a summary.
    expect(passedTestCount('pytest', 'step 1: 5 passed checks\n')).toBeNull();
    expect(passedTestCount('vitest', sample('vitest-color.txt'))).toBe(2);
    expect(passedTestCount('node:test', sample('node-test-spec-color.txt'))).toBe(2);
  });

  it('drops an absurd count, so an output cannot claim a named test ran by a huge number', () => {
    expect(passedTestCount('vitest', '      Tests  99999999999999999999 passed (1)')).toBeNull();
    expect(passedTestCount('go test', '--- PASS: T (0.00s)\n'.repeat(3))).toBe(3);
  });
});

describe('readCheckOutput: one reading for every parser', () => {
  it('reads stdout and stderr as one text, a summary at the start of stderr included', () => {
    // stdout ends without a newline: the summary on stderr is still a line of its own.
    const result = {
      stdoutTail: ' FAIL  a.test.ts > sums > adds',
      stderrTail: `${ESC}[32m# pass 2${ESC}[39m\n# fail 1\n`,
    };
    const output = readCheckOutput(result);
    expect(parseTestCounts(output)).toEqual({ passed: 2, failed: 1, skipped: 0 });
    expect(parseFailingTests(output)).toEqual(['a.test.ts > sums > adds']);
    expect(passedTestCount('node:test', output)).toBe(2);
    // The same as each parser reading the joined text itself.
    const joined = `${result.stdoutTail}\n${result.stderrTail}`;
    expect(parseTestCounts(output)).toEqual(parseTestCounts(joined));
    expect(parseFailingTests(output)).toEqual(parseFailingTests(joined));
  });
});
