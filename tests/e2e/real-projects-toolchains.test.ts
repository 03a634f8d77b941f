/**
 * Real projects with other toolchains, end to end (real CLI, codex and sandbox; a scripted model): pnpm
 * through corepack (packageManager), a Python project whose pytest comes from a sandbox.dockerfile (Debian's
 * python3-pytest, no python3-venv: no venv is made, the checks run with the image's Python), the same image
 * with a requirement it lacks (exit 4 before any worker run, with the fix), and the same toolchain from a
 * .devcontainer/devcontainer.json with a postCreateCommand. The others end COMPLETE with their DoD detected
 * and passed. The two Python projects share one Dockerfile, so the
 * project image (and the worker layered on it) is built once and reused by the second. (Go, Python and Rust
 * from Debian's packages: tests/e2e/real-projects-debian-toolchains.test.ts, a file of its own so the two run
 * side by side.)
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { LOCAL_BASE_IMAGE } from '../../src/sandbox/image-builder.js';
import { VENV_IGNORE, VENV_PROJECT_FILES } from '../support/python-venv-project.js';
import { lastDod, realProjectRepo, runRealProject } from '../support/real-project-run.js';
import { taskContainers } from '../support/task-containers.js';

const PYTHON_DOCKERFILE = `FROM ${LOCAL_BASE_IMAGE}
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pytest && rm -rf /var/lib/apt/lists/*
`;
const PYTHON_FILES = {
  'calc.py': 'def add(a, b):\n    return a + b\n',
  'test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
};
const PYTHON_IGNORE = '__pycache__/\n.pytest_cache/\n';

describe('real projects: other toolchains', () => {
  it('pnpm via corepack (packageManager): pnpm install in set-up, COMPLETE with pnpm test passed', async () => {
    const root = realProjectRepo(
      'rp-pnpm',
      {
        '.gitignore': 'node_modules/\n',
        'agent-runner.yaml': 'sandbox:\n  setup: ["pnpm install --frozen-lockfile"]\n',
        'package.json': `${JSON.stringify(
          {
            name: 'rp-pnpm',
            version: '1.0.0',
            private: true,
            packageManager: 'pnpm@9.15.9',
            scripts: { test: 'node --test' },
            devDependencies: { 'is-number': '7.0.0' },
          },
          null,
          2,
        )}\n`,
      },
      (dir) =>
        execFileSync('npx', ['--yes', 'pnpm@9.15.9', 'install', '--lockfile-only'], {
          cwd: dir,
          stdio: ['ignore', 'ignore', 'pipe'],
          env: { ...process.env, COREPACK_ENABLE_STRICT: '0' },
          timeout: 240_000,
        }),
    );
    const run = await runRealProject(root, `rp-pnpm-${Date.now()}`, {
      'five.test.js': `const test = require('node:test');
const assert = require('node:assert');
const isNumber = require('is-number');
test('five', () => assert.ok(isNumber(5)));
`,
    });
    expect(run.summary?.state, run.stderr).toBe('COMPLETE');
    expect(lastDod(run)).toMatchObject({
      status: 'passed',
      results: [{ command: 'pnpm test', status: 'passed' }],
    });
    expect(run.stderr).toContain('sandbox toolchain: pnpm 9.15.9 (packageManager, corepack)');
  });

  it('Python in a venv (the set-up of docs/toolchains.md): the project installed into .venv, pytest run from it, COMPLETE', async () => {
    const root = realProjectRepo('rp-venv', {
      '.gitignore': `${PYTHON_IGNORE}${VENV_IGNORE}`,
      ...VENV_PROJECT_FILES,
      'calc.py': PYTHON_FILES['calc.py'],
    });
    const run = await runRealProject(root, `rp-venv-${Date.now()}`, {
      // Not beside calc.py, and -P keeps the working directory off sys.path: `import calc` works only through
      // the venv's editable install.
      'tests/test_calc.py': PYTHON_FILES['test_calc.py'],
    });
    expect(run.summary?.state, `${JSON.stringify(run.summary)}\n${run.stderr}`).toBe('COMPLETE');
    const setup = run.events.filter((event) => event.type === 'setup_command' && event.phase === 'finished');
    expect(setup.map((event) => event.exitCode)).toEqual([0, 0]);
    expect(lastDod(run)).toMatchObject({
      status: 'passed',
      results: [{ command: '.venv/bin/python -P -m pytest -p no:cacheprovider tests', status: 'passed' }],
    });
    const dodEvent = run.events.filter((event) => event.type === 'dod').at(-1) as
      { dod: { results: { tests?: unknown }[] } } | undefined;
    expect(dodEvent?.dod.results[0]?.tests).toEqual({ passed: 1, failed: 0, skipped: 0 });
    expect(run.note).toContain('1 passed');
    expect(run.note).not.toContain('\x1b');
  }, 900_000);

  it("Python with pytest from a sandbox.dockerfile (Debian's python3-pytest, no python3-venv) and requirements it has: no venv, COMPLETE", async () => {
    const root = realProjectRepo('rp-python', {
      '.gitignore': PYTHON_IGNORE,
      // A package and a requirements file: the detected set-up would make a venv, which this image cannot.
      'pyproject.toml': '[project]\nname = "calc"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\n',
      'requirements-dev.txt': 'pytest>=7\n',
      'docker/Dockerfile': PYTHON_DOCKERFILE,
      'agent-runner.yaml': 'sandbox:\n  dockerfile: docker/Dockerfile\n',
    });
    const run = await runRealProject(root, `rp-python-${Date.now()}`, PYTHON_FILES);
    expect(run.summary?.state, run.stderr).toBe('COMPLETE');
    expect(lastDod(run)).toMatchObject({
      status: 'passed',
      results: [{ command: 'python3 -m pytest', status: 'passed' }],
    });
    expect(run.stderr).toContain('sandbox toolchain: project image from docker/Dockerfile');
    // The image's Python was asked: it has pytest and cannot make a venv, so nothing is set up.
    expect(run.stderr).toMatch(
      /sandbox set-up detected: none for Python: the image's python3 cannot make a virtual environment \(no python3-venv\) and has pytest 7\.\d+\.\d+ \(requirements-dev\.txt: pytest>=7\)/,
    );
    expect(run.events.filter((event) => event.type === 'setup_command')).toEqual([]);
  });

  it('the same image and a requirement it lacks: exit 4 before any worker run, python3-venv or sandbox.setup named', async () => {
    const root = realProjectRepo('rp-python-novenv', {
      '.gitignore': PYTHON_IGNORE,
      'requirements.txt': 'requests>=2\n',
      'pytest.ini': '[pytest]\n',
      'docker/Dockerfile': PYTHON_DOCKERFILE,
      'agent-runner.yaml': 'sandbox:\n  dockerfile: docker/Dockerfile\n',
    });
    const taskId = `rp-novenv-${Date.now()}`;
    const run = await runRealProject(root, taskId, PYTHON_FILES);
    expect(run.exitCode, run.stderr).toBe(4);
    expect(run.summary?.state).toBe('FAILED');
    const reason = String(run.summary?.reason);
    expect(reason).toContain(
      'the detected Python set-up needs a virtual environment for requests>=2 (requirements.txt; not installed)',
    );
    expect(reason).toContain('Install `python3-venv` in the image');
    expect(reason).toContain('set sandbox.setup in agent-runner.yaml');
    expect(run.events.some((event) => event.type === 'worker_started')).toBe(false);
    expect(run.events.filter((event) => event.type === 'setup_command')).toEqual([]);
    expect(await taskContainers(taskId, root)).toEqual([]);
    // The repository as it was (main checked out, its files unchanged); only the note and the run's logs added.
    expect(run.note).toContain('python3-venv');
    expect(execFileSync('git', ['status', '--porcelain'], { cwd: root, encoding: 'utf8' })).toBe(
      '?? .agent-runner/\n',
    );
    expect(execFileSync('git', ['branch', '--show-current'], { cwd: root, encoding: 'utf8' }).trim()).toBe(
      'main',
    );
    expect(execFileSync('git', ['branch', '--list'], { cwd: root, encoding: 'utf8' })).toBe('* main\n');
  });

  it('a .devcontainer/devcontainer.json: its Dockerfile and postCreateCommand, COMPLETE with pytest passed', async () => {
    const root = realProjectRepo('rp-devcontainer', {
      '.gitignore': PYTHON_IGNORE,
      'pytest.ini': '[pytest]\n',
      '.devcontainer/Dockerfile': PYTHON_DOCKERFILE,
      '.devcontainer/devcontainer.json': `{
  // as editors write them: comments and trailing commas
  "build": { "dockerfile": "Dockerfile" },
  "postCreateCommand": "python3 -m pytest --version",
}
`,
    });
    const run = await runRealProject(root, `rp-devc-${Date.now()}`, PYTHON_FILES);
    expect(run.summary?.state, run.stderr).toBe('COMPLETE');
    expect(lastDod(run)).toMatchObject({
      status: 'passed',
      results: [{ command: 'python3 -m pytest', status: 'passed' }],
    });
    const setup = run.events.filter((event) => event.type === 'setup_command' && event.phase === 'finished');
    expect(setup.map((event) => [event.command, event.exitCode])).toEqual([
      ['python3 -m pytest --version', 0],
    ]);
    expect(run.note).toContain('`python3 -m pytest --version`');
  });
});
