/**
 * A pnpm workspace monorepo, end to end (real CLI, codex and sandbox; a scripted model; pnpm through corepack and
 * vitest from the registry, installed in set-up from the lockfile): vitest is a devDependency of the packages,
 * not of the root; the root's `lint` rewrites files (`--write`). The first run commits a file the lint rewrites:
 * the DoD's lint check fails with the file named and put back, the named test criterion runs in the package
 * where the test lives; the second run commits what the lint writes, and the task ends COMPLETE with the
 * counts in the note and no terminal sequence in it.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { realProjectRepo, runRealProject } from '../support/real-project-run.js';

const PNPM = 'pnpm@9.15.9';

const pkg = (name: string) =>
  `${JSON.stringify(
    {
      name,
      version: '1.0.0',
      private: true,
      scripts: { test: 'vitest run' },
      devDependencies: { vitest: '3.2.4' },
    },
    null,
    2,
  )}\n`;

// The lint: trailing whitespace is an error; with --write it is removed in place (a formatter's way).
const LINT = `const fs = require('node:fs');
const path = require('node:path');
const write = process.argv.includes('--write');
let bad = 0;
for (const dir of ['packages/math/src', 'packages/strings/src']) {
  if (!fs.existsSync(dir)) continue;
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name);
    const text = fs.readFileSync(file, 'utf8');
    const clean = text.replace(/[ \\t]+$/gm, '');
    if (clean === text) continue;
    bad += 1;
    if (write) fs.writeFileSync(file, clean);
    console.log((write ? 'fixed ' : 'trailing whitespace: ') + file);
  }
}
process.exitCode = !write && bad > 0 ? 1 : 0;
`;

describe('real projects: a pnpm workspace', () => {
  it('vitest in the packages, a lint --write at the root: the rewrite is caught, then COMPLETE', async () => {
    const root = realProjectRepo(
      'rp-pnpm-ws',
      {
        '.gitignore': 'node_modules/\n',
        'pnpm-workspace.yaml': 'packages:\n  - "packages/*"\n',
        'package.json': `${JSON.stringify(
          {
            name: 'rp-pnpm-ws',
            version: '1.0.0',
            private: true,
            packageManager: PNPM,
            engines: { node: '>=20 <21' },
            scripts: { lint: 'node scripts/lint.js --write', test: 'pnpm -r test' },
          },
          null,
          2,
        )}\n`,
        'scripts/lint.js': LINT,
        'packages/strings/package.json': pkg('strings'),
        'packages/strings/src/shout.js': "export const shout = (s) => s.toUpperCase() + '!';\n",
        'packages/strings/test/shout.test.js': `import { test, expect } from 'vitest';
import { shout } from '../src/shout.js';
test('shouts', () => expect(shout('hi')).toBe('HI!'));
`,
        'packages/math/package.json': pkg('math'),
        'packages/math/src/one.js': 'export const one = () => 1;\n',
        'packages/math/test/one.test.js': `import { test, expect } from 'vitest';
import { one } from '../src/one.js';
test('one', () => expect(one()).toBe(1));
`,
        'agent-runner.yaml': 'sandbox:\n  setup: ["pnpm install --frozen-lockfile"]\n',
      },
      (dir) =>
        execFileSync('npx', ['--yes', PNPM, 'install', '--lockfile-only'], {
          cwd: dir,
          stdio: ['ignore', 'ignore', 'pipe'],
          env: { ...process.env, COREPACK_ENABLE_STRICT: '0' },
          timeout: 240_000,
        }),
    );
    const run = await runRealProject(
      root,
      `rp-pnpm-ws-${Date.now()}`,
      {
        // Trailing whitespace: the lint's --write rewrites this committed file.
        'packages/math/src/add.js': 'export const add = (a, b) => a + b;   \n',
        'packages/math/test/add.test.js': `import { test, expect } from 'vitest';
import { add } from '../src/add.js';
test('adds two numbers', () => expect(add(2, 3)).toBe(5));
`,
      },
      [],
      {
        criteria: [
          {
            id: 'AC-1',
            description: 'add(a, b) returns the sum, with a test named "adds two numbers".',
            type: 'test',
            critical: true,
            check: { kind: 'test', test_name: 'adds two numbers' },
          },
        ],
        then: [
          {
            type: 'next_action',
            version: 1,
            payload: {
              decision: { action: 'run_worker', reason: 'The lint rewrote add.js: commit what it writes.' },
              used_patterns: [],
              worker_call: {
                worker_type: 'codex',
                mode: 'exec',
                prompt: 'Run pnpm lint and commit what it writes.',
              },
            },
          },
          {
            type: 'completion_assessment',
            version: 1,
            payload: {
              all_criteria_satisfied: true,
              summary: 'The lint is clean and the tests pass.',
              by_criterion: [{ id: 'AC-1', status: 'passed', comment: 'The named test passed.' }],
              retrospective: [],
            },
          },
        ],
        laterRuns: [
          { run: 'pnpm lint && git commit -q -am "Format add.js" && git log --oneline -1' },
          { message: 'Ran the lint and committed what it wrote.' },
        ],
      },
    );
    expect(run.summary?.state, `${JSON.stringify(run.summary)}\n${run.stderr}`).toBe('COMPLETE');
    const dods = run.events.filter((event) => event.type === 'dod') as unknown as {
      dod: { results: { name: string; status: string; rewrote?: { paths: string[] }; tests?: unknown }[] };
    }[];
    // The first validation: the lint rewrote the committed file (failed, named, put back); the tests passed.
    expect(dods[0]?.dod.results).toMatchObject([
      { name: 'lint', status: 'failed', rewrote: { paths: ['packages/math/src/add.js'] } },
      { name: 'test', status: 'passed', tests: { passed: 3, failed: 0, skipped: 0 } },
    ]);
    expect(dods.at(-1)?.dod.results.map((result) => result.status)).toEqual(['passed', 'passed']);
    // The named test ran where it lives: in packages/math, not at the root (which has no vitest).
    const checks = run.events.filter((event) => event.type === 'criteria_checks').at(-1) as
      { results: { status: string; target: string; tests?: unknown }[] } | undefined;
    expect(checks?.results[0]).toMatchObject({ status: 'passed', tests: { passed: 1 } });
    expect(checks?.results[0]?.target).toContain('packages/math');
    expect(run.note).toContain('3 passed');
    expect(run.note).not.toContain('\u001b');
  }, 900_000);
});
