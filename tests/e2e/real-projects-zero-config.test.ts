/**
 * Zero configuration, end to end (real CLI, codex and sandbox; a scripted model; installs from the registry
 * through the gateway): five generated projects with no agent-runner.yaml and no `packageManager` field, each
 * with a real lockfile written by its package manager, end COMPLETE with the set-up detected from the
 * lockfile, shown in the progress and the note. yarn and pnpm are provided from the lockfile (corepack in
 * the toolchain layer). The Python package lives in `src/` so its tests pass only when the detected set-up
 * installed it into the venv. The projects share nothing, so they run at once (in one test: the support's
 * clean-up hooks belong to the test that registers them, which concurrent tests would mix up).
 */
import { describe, expect, it } from 'vitest';
import { writeLockfile, uvuPackage, uvuTest } from '../support/lockfile-projects.js';
import {
  lastDod,
  realProjectRepo,
  runRealProject,
  type RealProjectRun,
} from '../support/real-project-run.js';

const NODE_IGNORE = 'node_modules/\n.yarn/\n.pnp.*\n';
const ONE = { 'src/one.js': 'exports.one = () => 1;\n', 'test/one.test.js': uvuTest('one', 'one()', '1') };
const SUM = {
  'src/sum.js': 'exports.sum = (a, b) => a + b;\n',
  'test/sum.test.js': uvuTest('sum', 'sum(2, 3)', '5'),
};

function prefixed(prefix: string, files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(files).map(([name, text]) => [`${prefix}${name}`, text]));
}

function expectDetected(run: RealProjectRun, command: string, from: string): void {
  expect(run.summary?.state, `${run.stderr}\n${JSON.stringify(run.summary)}\n${run.note}`).toBe('COMPLETE');
  expect(run.stderr).toContain(`sandbox set-up detected: \`${command}\` (from ${from}`);
  expect(run.note).toContain('Detected (no `sandbox.setup` in agent-runner.yaml');
  expect(run.note, run.note).toContain(`- \`${command}\` from ${from}`);
  expect(lastDod(run).results.length).toBeGreaterThan(0);
  expect(lastDod(run).results.every((result) => result.status === 'passed')).toBe(true);
}

const PROJECTS: [string, () => Promise<void>][] = [
  [
    'npm: package-lock.json with devDependencies → npm ci',
    async () => {
      const root = realProjectRepo(
        'zc-npm',
        { '.gitignore': NODE_IGNORE, 'package.json': uvuPackage('zc-npm'), ...ONE },
        (dir) => writeLockfile(dir, 'npm'),
      );
      const run = await runRealProject(root, `zc-npm-${Date.now()}`, SUM);
      expectDetected(run, 'npm ci', 'package-lock.json');
    },
  ],

  [
    // The probe: the same project with `sandbox.setup: []` installs nothing, and its check fails on the missing uvu.
    'npm with sandbox.setup: [] → nothing detected, the check fails',
    async () => {
      const root = realProjectRepo(
        'zc-npm-none',
        {
          '.gitignore': NODE_IGNORE,
          'agent-runner.yaml': 'sandbox:\n  setup: []\n',
          'package.json': uvuPackage('zc-npm-none'),
          ...ONE,
        },
        (dir) => writeLockfile(dir, 'npm'),
      );
      const run = await runRealProject(root, `zc-npm-none-${Date.now()}`, SUM);
      expect(run.summary?.state).not.toBe('COMPLETE');
      expect(run.stderr).not.toContain('sandbox set-up detected');
      expect(run.note).not.toContain('Detected (no `sandbox.setup`');
      expect(JSON.stringify(run.summary?.rootCause)).toMatch(/uvu/);
    },
  ],
  [
    'pnpm: a workspace, pnpm from its lockfileVersion → pnpm install --frozen-lockfile',
    async () => {
      const root = realProjectRepo(
        'zc-pnpm',
        {
          '.gitignore': NODE_IGNORE,
          'pnpm-workspace.yaml': 'packages:\n  - "packages/*"\n',
          'package.json': `${JSON.stringify({ name: 'zc-pnpm', version: '1.0.0', private: true, scripts: { test: 'pnpm -r test' } }, null, 2)}\n`,
          'packages/a/package.json': uvuPackage('a'),
          ...prefixed('packages/a/', ONE),
        },
        (dir) => writeLockfile(dir, 'pnpm'),
      );
      const run = await runRealProject(root, `zc-pnpm-${Date.now()}`, prefixed('packages/a/', SUM));
      expectDetected(run, 'pnpm install --frozen-lockfile', 'pnpm-lock.yaml');
      expect(run.stderr).toContain('pnpm 9.15.9 (pnpm-lock.yaml (lockfileVersion 9.x), corepack)');
    },
  ],

  [
    'yarn 1: workspaces, no packageManager → yarn 1 provided, yarn install --frozen-lockfile',
    async () => {
      const root = realProjectRepo(
        'zc-yarn1',
        {
          '.gitignore': NODE_IGNORE,
          'package.json': `${JSON.stringify({ name: 'zc-yarn1', version: '1.0.0', private: true, workspaces: ['packages/*'], scripts: { test: 'yarn workspaces run test' } }, null, 2)}\n`,
          'packages/a/package.json': uvuPackage('a'),
          ...prefixed('packages/a/', ONE),
          'packages/b/package.json': uvuPackage('b'),
          ...prefixed('packages/b/', ONE),
        },
        (dir) => writeLockfile(dir, 'yarn1'),
      );
      const run = await runRealProject(root, `zc-yarn1-${Date.now()}`, prefixed('packages/b/', SUM));
      expectDetected(run, 'yarn install --frozen-lockfile', 'yarn.lock (yarn 1 lockfile)');
      expect(run.stderr).toContain('yarn 1.22.22 (yarn.lock (yarn 1 lockfile), corepack)');
    },
  ],

  [
    'yarn berry: a yarn 4 lockfile → yarn 4 provided, yarn install --immutable',
    async () => {
      const root = realProjectRepo(
        'zc-berry',
        {
          '.gitignore': NODE_IGNORE,
          // Out of the sandbox (scope.exclude): its nodeLinker reaches yarn through the toolchain layer.
          '.yarnrc.yml': 'nodeLinker: node-modules\n',
          'package.json': uvuPackage('zc-berry'),
          ...ONE,
        },
        (dir) => writeLockfile(dir, 'yarn4'),
      );
      const run = await runRealProject(root, `zc-berry-${Date.now()}`, SUM);
      expectDetected(run, 'yarn install --immutable', 'yarn.lock (yarn 2 or later lockfile)');
      expect(run.stderr).toContain(
        'yarn 4.18.1 (yarn.lock (__metadata version 10), corepack, nodeLinker node-modules)',
      );
    },
  ],

  [
    'Python: a src-layout package tested with pytest → a venv with the package installed',
    async () => {
      const root = realProjectRepo('zc-python', {
        '.gitignore': '__pycache__/\n.pytest_cache/\n',
        'pyproject.toml':
          '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n' +
          '[project]\nname = "calc"\nversion = "0.1.0"\n\n[tool.setuptools.packages.find]\nwhere = ["src"]\n\n' +
          '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
        'src/calc/__init__.py': 'def one():\n    return 1\n',
        'tests/test_one.py': 'from calc import one\n\n\ndef test_one():\n    assert one() == 1\n',
      });
      const run = await runRealProject(root, `zc-python-${Date.now()}`, {
        'src/calc/add.py': 'def add(a, b):\n    return a + b\n',
        'tests/test_add.py': 'from calc.add import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
      });
      expectDetected(run, '.venv/bin/pip install --no-build-isolation -e .', 'pyproject.toml');
      expect(lastDod(run).results).toMatchObject([{ command: 'python3 -m pytest', status: 'passed' }]);
    },
  ],
];

describe('real projects: zero configuration', () => {
  it('npm, pnpm, yarn 1, yarn berry and Python with no agent-runner.yaml: COMPLETE, the set-up detected', async () => {
    const only = process.env.ZERO_CONFIG_ONLY;
    const chosen = PROJECTS.filter(([name]) => only === undefined || name.startsWith(only));
    const outcomes = await Promise.allSettled(chosen.map(([, project]) => project()));
    const failures = outcomes.flatMap((outcome, index) =>
      outcome.status === 'rejected' ? [`${chosen[index]?.[0]}: ${String(outcome.reason)}`] : [],
    );
    expect(failures.join('\n\n')).toBe('');
  }, 1_200_000);
});
