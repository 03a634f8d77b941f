/**
 * Running one named test: which framework a repository uses (read from the task branch's files as data,
 * never executed on the host) and the command that runs only that test. How many tests its output says passed
 * is read by src/workspace/checks/test-counts.ts (`passedTestCount`), the one parser of test output.
 */
export type TestFramework = 'vitest' | 'jest' | 'mocha' | 'node:test' | 'pytest' | 'go test' | 'cargo test';

/** The files of the tree detection looks at (text of package.json, names of the others). */
export interface FrameworkClues {
  packageJson: string | null;
  /** Top-level file names of the tree. */
  files: readonly string[];
}

/** What was looked at, for the "not executable" reason. */
export const FRAMEWORKS_LOOKED_FOR =
  'vitest, jest, mocha or node --test in package.json; go.mod; Cargo.toml; pytest configuration';

/** The framework of the tree, or null. JavaScript frameworks first: they are the most precise clue. */
export function detectTestFramework(clues: FrameworkClues): TestFramework | null {
  if (clues.packageJson !== null) {
    let parsed: {
      scripts?: Record<string, unknown>;
      dependencies?: Record<string, unknown>;
      devDependencies?: Record<string, unknown>;
    } = {};
    try {
      parsed = JSON.parse(clues.packageJson) as typeof parsed;
    } catch {
      parsed = {};
    }
    const deps = { ...(parsed.dependencies ?? {}), ...(parsed.devDependencies ?? {}) };
    const testScript = typeof parsed.scripts?.test === 'string' ? parsed.scripts.test : '';
    for (const name of ['vitest', 'jest', 'mocha'] as const)
      if (name in deps || new RegExp(`\\b${name}\\b`).test(testScript)) return name;
    if (/\bnode\b[^&|;]*--test\b/.test(testScript)) return 'node:test';
  }
  const files = new Set(clues.files);
  if (files.has('go.mod')) return 'go test';
  if (files.has('Cargo.toml')) return 'cargo test';
  if (['pytest.ini', 'conftest.py', 'pyproject.toml', 'setup.cfg', 'tox.ini'].some((name) => files.has(name)))
    return 'pytest';
  return null;
}

/** A single-quoted shell word: model text never reaches the shell unquoted. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The shell command (run with bash in the sandbox, like a DoD check) that runs only the test named `testName`,
 * in the repository-relative directory `dir` (`''`: the root) with `file` relative to that directory. Below
 * the root a JavaScript framework's binary is looked up in the directory's own `node_modules/.bin` (pnpm links
 * each package's) and then in the root's (npm and yarn workspaces hoist them there).
 */
export function namedTestCommand(
  framework: TestFramework,
  testName: string,
  file?: string,
  dir = '',
): string {
  const command = testCommandAt(framework, testName, file, dir === '' ? 'node_modules/.bin/' : '');
  if (dir === '') return command;
  const up = dir
    .split('/')
    .map(() => '..')
    .join('/');
  const bins = ['vitest', 'jest', 'mocha'].includes(framework)
    ? `PATH="$PWD/node_modules/.bin:$PWD/${up}/node_modules/.bin:$PATH" `
    : '';
  return `cd ${shellQuote(dir)} && ${bins}${command}`;
}

function testCommandAt(
  framework: TestFramework,
  testName: string,
  file: string | undefined,
  bin: string,
): string {
  const exact = escapeRegExp(testName);
  const fileWord = file ? ` ${shellQuote(file)}` : '';
  switch (framework) {
    case 'vitest':
      return `${bin}vitest run${fileWord} -t ${shellQuote(exact)}`;
    case 'jest':
      return `${bin}jest${fileWord} -t ${shellQuote(exact)}`;
    case 'mocha':
      return `${bin}mocha${fileWord} --grep ${shellQuote(exact)}`;
    case 'node:test':
      return `node --test --test-name-pattern=${shellQuote(exact)}${fileWord}`;
    case 'pytest':
      // pytest ids (file::name) are exact; -k takes an expression, fine for a bare function name.
      return file && /^[A-Za-z_][A-Za-z0-9_]*$/.test(testName)
        ? `python3 -m pytest ${shellQuote(`${file}::${testName}`)}`
        : `python3 -m pytest${fileWord} -k ${shellQuote(testName)}`;
    case 'go test':
      return `go test ./... -v -run ${shellQuote(`^${exact}$`)}`;
    case 'cargo test':
      return `cargo test ${shellQuote(testName)}`;
  }
}
