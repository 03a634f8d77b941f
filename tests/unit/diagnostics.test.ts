/**
 * The problems a linter or type checker names, as the items a red lint or type check is compared by. The ESLint,
 * tsc and Prettier outputs are those tools' own (the versions in this repository's devDependencies, run on a
 * file with problems); ruff, go vet and mypy lines are copied from their documented formats.
 */
import { describe, expect, it } from 'vitest';
import { compareWithBase } from '../../src/core/baseline.js';
import type { DodCheckResult } from '../../src/core/types.js';
import { parseFailingTests } from '../../src/workspace/checks/test-counts.js';

const ESLINT = [
  '',
  '/workspace/src/a.js',
  "  1:7   error  'unused' is assigned a value but never used  no-unused-vars",
  "  2:10  error  'f' is defined but never used                no-unused-vars",
  "  2:23  error  'undefinedName' is not defined               no-undef",
  '',
  '✖ 3 problems (3 errors, 0 warnings)',
  '',
].join('\n');

describe('a linter or type checker red on the base: its problems are the items compared', () => {
  it("ESLint's default output: each problem with its file and rule, without line and column", () => {
    expect(parseFailingTests(ESLINT)).toEqual([
      "/workspace/src/a.js: 'unused' is assigned a value but never used no-unused-vars",
      "/workspace/src/a.js: 'f' is defined but never used no-unused-vars",
      "/workspace/src/a.js: 'undefinedName' is not defined no-undef",
    ]);
  });

  it('tsc, prettier --check, and path:line:col tools (ruff, go vet, mypy)', () => {
    expect(
      parseFailingTests("src/b.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.\n"),
    ).toEqual(["src/b.ts: TS2322 Type 'string' is not assignable to type 'number'."]);
    expect(
      parseFailingTests(
        'Checking formatting...\n[warn] src/a.js\n[warn] src/b.ts\n[warn] Code style issues found in 2 files. Run Prettier with --write to fix.\n',
      ),
    ).toEqual(['prettier: src/a.js', 'prettier: src/b.ts']);
    expect(
      parseFailingTests(
        'a.py:1:8: F401 [*] `os` imported but unused\n./main.go:7:2: fmt.Printf format %d has arg s of wrong type string\nb.py:3: error: Incompatible types in assignment  [assignment]\nFound 1 error.\n',
      ),
    ).toEqual([
      'a.py: F401 [*] `os` imported but unused',
      './main.go: fmt.Printf format %d has arg s of wrong type string',
      'b.py: error: Incompatible types in assignment  [assignment]',
    ]);
  });

  it("a test runner's failing tests win; an indented path:line (a stack trace) is not a problem", () => {
    const output =
      'not ok 1 - adds\n    at Object.<anonymous> (/workspace/test/a.test.js:3:5)\n  test/a.test.js:3:5: thrown\n# fail 1\n';
    expect(parseFailingTests(output)).toEqual(['adds']);
    expect(parseFailingTests('    at f (/workspace/src/a.js:3:5)\n')).toBeNull();
  });

  it('a lint red on the base is not worse while it names no new problem, and worse when it does', () => {
    const result = (output: string): DodCheckResult => ({
      name: 'lint',
      command: 'npm run lint',
      status: 'failed',
      exitCode: 1,
      durationMs: 900,
      outputTail: output,
      failingTests: parseFailingTests(output) ?? undefined,
    });
    const base = result(ESLINT);
    // The same problems, lines shifted by an edit above them.
    const shifted = ESLINT.replace('1:7 ', '4:7 ').replace(/ 2:(\d+)/g, ' 5:$1');
    expect(compareWithBase(result(shifted), base)?.verdict).toBe('red_before');
    // One problem fixed: still not worse.
    expect(
      compareWithBase(
        result(
          ESLINT.split('\n')
            .filter((line) => !line.includes('no-undef'))
            .join('\n'),
        ),
        base,
      )?.verdict,
    ).toBe('red_before');
    // A new problem in a new file.
    const added = `${ESLINT}\n/workspace/src/new.js\n  1:1  error  'x' is not defined  no-undef\n`;
    const compared = compareWithBase(result(added), base);
    expect(compared?.verdict).toBe('worse');
    expect(compared?.newFailures).toEqual(["/workspace/src/new.js: 'x' is not defined no-undef"]);
  });
});
