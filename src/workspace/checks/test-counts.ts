/**
 * How many tests a check's output says passed, failed and were skipped: read from the closing summary of
 * vitest, jest, mocha, node's test runner (spec and TAP reporters), pytest, go test (`-v`) and cargo test.
 * The output is the worker's to shape (its tests print what they like), so the counts are evidence shown to
 * a person only: the completion gate never reads them. Parsing is bounded (the last {@link PARSED_CHARS}
 * characters, one line at a time, with patterns that cannot backtrack far) and a count above
 * {@link MAX_COUNT} makes the whole reading void rather than shown. The one parser of test output: a named
 * test's check reads its framework's passed count here too ({@link passedTestCount}). How counts are said:
 * src/core/test-counts.ts.
 */
import type { TestCounts } from '../../core/types.js';
import { stripTerminalSequences } from '../../notes/terminal-text.js';
import { parseDiagnostics } from './diagnostics.js';
import type { TestFramework } from './test-frameworks.js';

/** Characters of output read, from its end (the summary is at the end). */
export const PARSED_CHARS = 64 * 1024;
/** A count above this is not believed: the reading is dropped. */
export const MAX_COUNT = 1_000_000;
/** Longest line looked at: a summary line is short. */
const MAX_LINE = 400;

type Kind = keyof TestCounts;

/** One runner's summary: lines it recognises, and which count each number of such a line is. */
interface SummaryFormat {
  /** The runner that prints it. */
  framework: TestFramework;
  /** Whether a line is this runner's summary line. */
  line: RegExp;
  /** `N word` pairs in the line, and the count each word stands for. */
  words: Record<string, Kind>;
  /** Several summary lines add up (cargo: one per crate and doc-tests; mocha: passing, pending and failing). */
  additive: boolean;
}

const FORMATS: readonly SummaryFormat[] = [
  // vitest: "      Tests  1 failed | 2 passed | 1 skipped (4)" (not "Test Files ..."); one line per run, so a
  // workspace's `pnpm -r test` (one run per package) adds up.
  {
    framework: 'vitest',
    line: /^\s*Tests\s+\d+ (?:passed|failed|skipped|todo)\b.*\(\d+\)\s*$/,
    words: { passed: 'passed', failed: 'failed', skipped: 'skipped', todo: 'skipped' },
    additive: true,
  },
  // jest: "Tests:       1 failed, 4 skipped, 1 passed, 6 total" (one line per run, as vitest's).
  {
    framework: 'jest',
    line: /^\s*Tests:\s+\d+ \w+.*\d+ total\s*$/,
    words: { passed: 'passed', failed: 'failed', skipped: 'skipped', todo: 'skipped' },
    additive: true,
  },
  // cargo: "test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.2s".
  {
    framework: 'cargo test',
    line: /^\s*test result: (?:ok|FAILED)\. \d+ passed; \d+ failed; \d+ ignored\b/,
    words: { passed: 'passed', failed: 'failed', ignored: 'skipped' },
    additive: true,
  },
  // pytest: "==== 1 failed, 1 passed, 1 skipped in 0.82s ====" (also "no tests ran"); with -q undecorated,
  // "1 passed, 1 deselected in 0.02s", read only when it starts with a word pytest counts.
  {
    framework: 'pytest',
    line: /^(?:=+ \d+ [a-z]+(?:, \d+ [a-z]+)* in [\d.]+m?s(?: \([^)]*\))? =+|\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)(?:, \d+ [a-z]+)* in [\d.]+m?s(?: \([^)]*\))?)\s*$/,
    words: {
      passed: 'passed',
      failed: 'failed',
      error: 'failed',
      errors: 'failed',
      skipped: 'skipped',
      xfailed: 'skipped',
      xpassed: 'passed',
    },
    additive: false,
  },
  // node --test: "ℹ pass 2" (spec reporter) or "# pass 2" (TAP), one count a line.
  {
    framework: 'node:test',
    line: /^(?:ℹ|#) (?:pass|fail|skipped|todo|cancelled) \d+\s*$/,
    words: { pass: 'passed', fail: 'failed', cancelled: 'failed', skipped: 'skipped', todo: 'skipped' },
    additive: true,
  },
  // mocha: "  2 passing (5ms)", "  1 pending", "  1 failing", one count a line.
  {
    framework: 'mocha',
    line: /^\s*\d+ (?:passing|pending|failing)(?: \(\d+(?:\.\d+)?m?s\))?\s*$/,
    words: { passing: 'passed', pending: 'skipped', failing: 'failed' },
    additive: true,
  },
];

/**
 * The prefix a workspace runner puts before each line of a package's output: pnpm's `packages/math test: `
 * (a package path, then the script) and turbo's `math:test: `. Read past, so a monorepo's runs are read like one.
 * A task name is never a number: `b.py:3: error: ...` is a problem at a line, not a prefix.
 */
const WORKSPACE_PREFIX = /^(?:[\w@.-]+\/[\w@./-]+ [\w:.-]+|[\w@./-]+:(?!\d+: )[\w.-]+): /;

/**
 * A check's output as every reading here sees it: its end, without terminal sequences or workspace prefixes,
 * no line too long. Made once by {@link readCheckOutput} and handed to each reading, so one check's output is
 * split and stripped once however many things are read from it.
 */
export interface CheckOutput {
  readonly lines: readonly string[];
}

/** The lines parsed from one text (stdout and stderr already joined). */
function outputLines(output: string): string[] {
  return stripTerminalSequences(output.slice(-PARSED_CHARS))
    .split(/\r?\n|\r/)
    .filter((line) => line.length <= MAX_LINE)
    .map((line) => line.replace(WORKSPACE_PREFIX, ''));
}

/** A check's stdout and stderr, read once for the counts, the failing tests and the named test's count. */
export function readCheckOutput(result: { stdoutTail: string; stderrTail: string }): CheckOutput {
  return { lines: outputLines(`${result.stdoutTail}\n${result.stderrTail}`) };
}

function linesOf(output: string | CheckOutput): readonly string[] {
  return typeof output === 'string' ? outputLines(output) : output.lines;
}

/** go test -v: one result line per test (subtests indented), no summary of counts. */
const GO_RESULT = /^\s*--- (PASS|FAIL|SKIP): \S/;
const GO_KIND: Record<string, Kind> = { PASS: 'passed', FAIL: 'failed', SKIP: 'skipped' };

/** The `N word` pairs of one summary line, as counts; null when a number is not believable. */
function countsOfLine(line: string, format: SummaryFormat): TestCounts | null {
  const counts: TestCounts = { passed: 0, failed: 0, skipped: 0 };
  // Node's lines put the word first ("pass 2"), every other runner the number.
  const pairs = [...line.matchAll(/\b(\d+) ([a-z]+)\b|\b([a-z]+) (\d+)\b/g)];
  for (const pair of pairs) {
    const value = Number(pair[1] ?? pair[4]);
    const kind = format.words[pair[2] ?? pair[3] ?? ''];
    if (kind === undefined) continue;
    if (!Number.isSafeInteger(value) || value > MAX_COUNT) return null;
    counts[kind] += value;
  }
  return counts;
}

function add(a: TestCounts, b: TestCounts): TestCounts {
  return { passed: a.passed + b.passed, failed: a.failed + b.failed, skipped: a.skipped + b.skipped };
}

/** Counts read from one runner's summary lines: the last line, or all of them added up. */
function readFormat(lines: readonly string[], format: SummaryFormat): TestCounts | null {
  const matching = lines.filter((line) => format.line.test(line));
  if (matching.length === 0) return null;
  const read = (format.additive ? matching : matching.slice(-1)).map((line) => countsOfLine(line, format));
  if (read.some((counts) => counts === null)) return null;
  return (read as TestCounts[]).reduce(add);
}

function readGo(lines: readonly string[]): TestCounts | null {
  const counts: TestCounts = { passed: 0, failed: 0, skipped: 0 };
  let seen = false;
  for (const line of lines) {
    const kind = GO_KIND[GO_RESULT.exec(line)?.[1] ?? ''];
    if (kind === undefined) continue;
    counts[kind] += 1;
    seen = true;
  }
  return seen ? counts : null;
}

/**
 * The tests an output says passed, failed and were skipped, or null when it holds no summary this knows (or
 * an unbelievable one). The first runner whose summary is found wins: one check runs one runner.
 */
export function parseTestCounts(output: string | CheckOutput): TestCounts | null {
  const lines = linesOf(output);
  for (const format of FORMATS) {
    const counts = readFormat(lines, format);
    if (counts !== null) return believable(counts);
  }
  return believable(readGo(lines));
}

function believable(counts: TestCounts | null): TestCounts | null {
  if (counts === null) return null;
  const total = counts.passed + counts.failed + counts.skipped;
  return total > MAX_COUNT ? null : counts;
}

/**
 * How many tests the output says passed, read from `framework`'s summary only (null: it holds none, or an
 * unbelievable one). A named test's check decides on this: zero with exit 0 means the name matched nothing.
 */
export function passedTestCount(framework: TestFramework, output: string | CheckOutput): number | null {
  const lines = linesOf(output);
  if (framework === 'go test') return believable(readGo(lines))?.passed ?? null;
  const format = FORMATS.find((candidate) => candidate.framework === framework);
  return format ? (believable(readFormat(lines, format))?.passed ?? null) : null;
}

/** Most failing tests kept per check, and the longest name kept. */
export const MAX_FAILING_TESTS = 200;
const MAX_TEST_NAME = 200;

/** One runner's line that names a failing test, and the name in it. */
const FAILING_LINES: readonly RegExp[] = [
  // vitest's summary: " FAIL  test/a.test.ts > suite > name" (a file that failed to load has no " > ").
  /^\s*FAIL\s+(\S.* > .+?)\s*$/,
  // jest: "  ● suite › name" (not "● Test suite failed to run").
  /^\s*● (?!Test suite failed to run)(.+?)\s*$/,
  // node --test, spec reporter: "✖ name (1.2ms)"; TAP: "not ok 3 - name".
  /^\s*✖ (.+?) \(\d+(?:\.\d+)?m?s\)\s*$/,
  /^\s*not ok \d+ - (.+?)(?:\s+#.*)?$/,
  // pytest's short summary: "FAILED tests/test_a.py::test_b - AssertionError" (and errors).
  /^(?:FAILED|ERROR) (\S+)(?: - .*)?$/,
  // go test: "--- FAIL: TestName (0.00s)" (subtests indented).
  /^\s*--- FAIL: (\S+)/,
  // cargo test: "test tests::name ... FAILED".
  /^test (\S+) \.\.\. FAILED$/,
];

/**
 * The failing tests an output names, or, when it names none, the problems a linter or type checker names
 * (src/workspace/checks/diagnostics.ts); null when it names neither (then only the counts can compare a run with the
 * base). Mocha names a failure on two lines ("  1) suite" then "       name:"), read as one.
 * Bounded like the counts: the last {@link PARSED_CHARS} characters, lines of at most 400 characters, at most
 * {@link MAX_FAILING_TESTS} names of at most 200 characters each.
 */
export function parseFailingTests(output: string | CheckOutput): string[] | null {
  const lines = linesOf(output);
  const names = new Set<string>();
  lines.forEach((line, index) => {
    if (names.size >= MAX_FAILING_TESTS) return;
    const mocha = /^\s+\d+\) (.+?)\s*$/.exec(line);
    const next = lines[index + 1];
    const mochaName = mocha && next !== undefined ? /^\s{4,}(\S.*):\s*$/.exec(next) : null;
    if (mocha && mochaName) {
      names.add(`${mocha[1]} ${mochaName[1]}`.slice(0, MAX_TEST_NAME));
      return;
    }
    for (const pattern of FAILING_LINES) {
      const found = pattern.exec(line);
      if (found?.[1]) {
        names.add(found[1].slice(0, MAX_TEST_NAME));
        return;
      }
    }
  });
  if (names.size > 0) return [...names];
  // No test runner named a failure: a linter's or type checker's problems, when it names some.
  const problems = parseDiagnostics(lines, MAX_FAILING_TESTS);
  return problems.length > 0 ? problems : null;
}
