/**
 * The problems a linter or type checker names, as "failing items" a red check can be compared by when it names
 * no failing test: a lint or type check red on the base is then "not worse" when it names no problem the base
 * did not (src/core/baseline.ts). Each problem is its file and its message (rule or code included), without the
 * line and column, so an edit that shifts lines does not make an old problem look new. Read: tsc
 * (`src/a.ts(3,5): error TS2322: ...`), ESLint's default output (a file line, then `  3:5  error  message
 * rule`), the `path:line:col: message` form of ESLint's unix format, ruff, flake8, mypy, go vet, golangci-lint,
 * shellcheck's gcc format and compilers, and `prettier --check` (`[warn] src/a.ts`). Lines that start with
 * space (stack traces, a test's own output) are not read as `path:line` problems. Pure and bounded by the lines
 * the caller gives (src/workspace/checks/test-counts.ts).
 */

const MAX_ITEM = 200;

/** `src/a.ts(3,5): error TS2322: Type ...` */
const TSC = /^(\S[^()\s]*)\(\d+,\d+\): (?:error|warning) (TS\d+): (.+)$/;
/** `a.py:1:1: F401 'os' imported but unused`, `./a.go:3:2: ...`, `src/a.ts:3:5: message [Error/no-undef]` */
const PATH_LINE = /^(\.{0,2}\/?[\w@.-][\w@./-]*\.[\w]+):\d+(?::\d+)?:\s+(.+)$/;
/** ESLint's default output: a file on its own line, then its problems. */
const ESLINT_FILE = /^(\/\S+|[\w@.-][\w@./-]*\.[cm]?[jt]sx?|[\w@.-][\w@./-]*\.(?:vue|svelte|json|md))$/;
const ESLINT_PROBLEM = /^\s+\d+:\d+\s+(?:error|warning)\s+(.+?)\s*$/;
/** `[warn] src/a.ts` from `prettier --check` (not its closing "Code style issues found ..." line). */
const PRETTIER = /^\[warn\] (?!Code style issues)(\S.*)$/;

/** The problems the lines name, in order and without repeats, at most `max`; empty when none. */
export function parseDiagnostics(lines: readonly string[], max: number): string[] {
  const items = new Set<string>();
  let eslintFile: string | null = null;
  for (const line of lines) {
    if (items.size >= max) break;
    const tsc = TSC.exec(line);
    const pathLine = tsc ? null : PATH_LINE.exec(line);
    const prettier = PRETTIER.exec(line);
    const problem = eslintFile ? ESLINT_PROBLEM.exec(line) : null;
    if (tsc) items.add(`${tsc[1]}: ${tsc[2]} ${tsc[3]}`.slice(0, MAX_ITEM));
    else if (pathLine) items.add(`${pathLine[1]}: ${pathLine[2]}`.slice(0, MAX_ITEM));
    else if (prettier) items.add(`prettier: ${prettier[1]}`.slice(0, MAX_ITEM));
    else if (problem && eslintFile)
      items.add(`${eslintFile}: ${(problem[1] ?? '').replace(/\s{2,}/g, ' ')}`.slice(0, MAX_ITEM));
    if (ESLINT_FILE.test(line)) eslintFile = line;
    else if (line.trim() === '') eslintFile = null;
  }
  return [...items];
}
