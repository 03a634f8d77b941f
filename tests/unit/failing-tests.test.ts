/**
 * The failing tests a check's output names, per runner. The vitest and node outputs are those runners' own
 * (the node one as TAP: a check's output is not a terminal), colours included; the others are copied from
 * their runners' documented formats.
 */
import { describe, expect, it } from 'vitest';
import { MAX_FAILING_TESTS, parseFailingTests } from '../../src/workspace/checks/test-counts.js';

const ESC = '\u001b';

describe('parseFailingTests', () => {
  it('vitest: the summary FAIL lines, colours read past; a file that failed to load names no test', () => {
    const output = [
      ` ${ESC}[31m❯${ESC}[39m b.test.ts (2 tests | 1 failed)`,
      `${ESC}[41m${ESC}[1m FAIL ${ESC}[22m${ESC}[49m b.test.ts${ESC}[2m > ${ESC}[22mslugify${ESC}[2m > ${ESC}[22mjoins words`,
      ' FAIL  broken.test.ts [ broken.test.ts ]',
      '      Tests  1 failed | 1 passed (2)',
    ].join('\n');
    expect(parseFailingTests(output)).toEqual(['b.test.ts > slugify > joins words']);
  });

  it("node's test runner: TAP and spec", () => {
    const tap =
      'ok 1 - adds\n  ---\n  ...\n# Subtest: breaks on purpose\nnot ok 2 - breaks on purpose\n  ---\n# fail 1\n';
    expect(parseFailingTests(tap)).toEqual(['breaks on purpose']);
    const spec = '✔ adds (0.5ms)\n✖ breaks on purpose (1.2ms)\n  AssertionError\nℹ fail 1\n';
    expect(parseFailingTests(spec)).toEqual(['breaks on purpose']);
  });

  it('jest, mocha, pytest, go test and cargo test', () => {
    expect(parseFailingTests('  ● slugify › joins words\n\n    expect(received).toBe(expected)\n')).toEqual([
      'slugify › joins words',
    ]);
    expect(parseFailingTests('  ● Test suite failed to run\n')).toBeNull();
    expect(
      parseFailingTests(
        '  1 passing (5ms)\n  1 failing\n\n  1) slugify\n       joins words:\n     AssertionError\n',
      ),
    ).toEqual(['slugify joins words']);
    expect(
      parseFailingTests(
        '=========================== short test summary info ============================\n' +
          'FAILED tests/test_calc.py::test_add - assert 4 == 5\nERROR tests/test_io.py::test_read\n' +
          '========================= 1 failed, 1 error, 3 passed in 0.12s =========================\n',
      ),
    ).toEqual(['tests/test_calc.py::test_add', 'tests/test_io.py::test_read']);
    expect(
      parseFailingTests(
        '=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    --- FAIL: TestAdd/zero (0.00s)\nFAIL\n',
      ),
    ).toEqual(['TestAdd', 'TestAdd/zero']);
    expect(parseFailingTests('test tests::adds ... ok\ntest tests::subtracts ... FAILED\n')).toEqual([
      'tests::subtracts',
    ]);
  });

  it('none named: null (unknown), not an empty list', () => {
    expect(parseFailingTests('Error: something broke\n')).toBeNull();
    expect(parseFailingTests('')).toBeNull();
  });

  it('bounded: at most MAX_FAILING_TESTS names of at most 200 characters', () => {
    const many = Array.from({ length: 500 }, (_, index) => `--- FAIL: Test${index} (0.00s)`).join('\n');
    expect(parseFailingTests(many)).toHaveLength(MAX_FAILING_TESTS);
    const long = parseFailingTests(`--- FAIL: T${'x'.repeat(300)} (0.00s)\n`);
    expect(long?.[0]).toHaveLength(200);
  });
});
