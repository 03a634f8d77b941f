/**
 * The other workers on generated projects that need a real toolchain and a real install (real CLI, real
 * Docker, the real worker binary, scripted models): an npm project with devDependencies and a lockfile whose
 * set-up runs `npm ci` with Claude Code as the worker, and a project that declares Node 20 with Gemini CLI as
 * the worker, which runs on its own Node 22 while the project's checks see the project's Node 20.
 */
import { describe, expect, it } from 'vitest';
import { writeNpmProject } from '../support/npm-project.js';
import { lastDod, realProjectRepo, runRealProject } from '../support/real-project-run.js';

const TEST_JS = `const test = require('node:test');
const assert = require('node:assert');
const isNumber = require('is-number');
const { double } = require('./double.js');
test('doubles', () => {
  assert.ok(isNumber(double(2)));
  assert.strictEqual(double(2), 4);
});
`;

describe('real projects with the other workers', () => {
  it('claude: npm ci of a lockfile project with devDependencies in set-up, then COMPLETE with npm test passed', async () => {
    const root = realProjectRepo(
      'rp-claude-npm',
      {
        '.gitignore': 'node_modules/\n',
        'agent-runner.yaml': 'worker:\n  type: claude\nsandbox:\n  setup: ["npm ci --no-audit --no-fund"]\n',
      },
      (dir) =>
        writeNpmProject(dir, {
          name: 'rp-claude-npm',
          devDependencies: { 'is-number': '7.0.0' },
          scripts: { test: 'node --test' },
        }),
    );
    const run = await runRealProject(root, `rp-claude-${Date.now()}`, {
      'double.js': 'exports.double = (n) => n * 2;\n',
      'double.test.js': TEST_JS,
    });
    expect(run.summary?.state, run.stderr).toBe('COMPLETE');
    expect(
      run.events.filter((event) => event.type === 'worker_started').map((event) => event.worker),
    ).toEqual(['claude']);
    expect(lastDod(run)).toMatchObject({
      status: 'passed',
      results: [{ command: 'npm test', status: 'passed' }],
    });
    const setup = run.events.filter((event) => event.type === 'setup_command' && event.phase === 'finished');
    expect(setup.map((event) => event.exitCode)).toEqual([0]);
  });

  it('gemini: the project declares Node 20; the checks run on it while gemini runs on its own Node 22', async () => {
    const root = realProjectRepo('rp-gemini-engines', {
      'agent-runner.yaml': 'worker:\n  type: gemini\n',
      'package.json': `${JSON.stringify({ name: 'rp-gemini', version: '1.0.0', private: true, engines: { node: '>=20 <21' }, scripts: { test: 'node --test' } }, null, 2)}\n`,
    });
    const run = await runRealProject(root, `rp-gemini-${Date.now()}`, {
      'version.test.js': `const test = require('node:test');
const assert = require('node:assert');
test('runs on the declared Node', () => {
  assert.strictEqual(process.versions.node.split('.')[0], '20');
});
`,
    });
    expect(run.summary?.state, run.stderr).toBe('COMPLETE');
    expect(
      run.events.filter((event) => event.type === 'worker_started').map((event) => event.worker),
    ).toEqual(['gemini']);
    expect(lastDod(run)).toMatchObject({
      status: 'passed',
      results: [{ command: 'npm test', status: 'passed' }],
    });
    expect(run.stderr).toMatch(
      /sandbox toolchain: Node 20\.\d+\.\d+ \(package\.json engines\.node: >=20 <21/,
    );
  });
});
