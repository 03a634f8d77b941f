/**
 * Real projects, end to end: the real CLI, codex and sandbox, a scripted model. An npm project with a
 * lockfile and a devDependency (`npm ci` from the registry through the default allowlist proxy), and one whose
 * engines.node asks for a newer Node than the worker image's: each ends COMPLETE with its DoD detected and
 * passed in the sandbox.
 */
import { describe, expect, it } from 'vitest';
import { writeNpmProject } from '../support/npm-project.js';
import { lastDod, realProjectRepo, runRealProject } from '../support/real-project-run.js';

const TEST_JS = `const test = require('node:test');
const assert = require('node:assert');
const isNumber = require('is-number');
const { double } = require('./double.js');
test('double', () => {
  assert.ok(isNumber(double(2)));
  assert.strictEqual(double(2), 4);
});
`;

describe('real projects: npm', () => {
  it('npm ci of a lockfile project with devDependencies in set-up, then COMPLETE with npm test passed', async () => {
    const root = realProjectRepo(
      'rp-npm',
      {
        '.gitignore': 'node_modules/\n',
        'agent-runner.yaml': 'sandbox:\n  setup: ["npm ci --no-audit --no-fund"]\n',
      },
      (dir) =>
        writeNpmProject(dir, {
          name: 'rp-npm',
          devDependencies: { 'is-number': '7.0.0' },
          scripts: { test: 'node --test' },
        }),
    );
    const run = await runRealProject(root, `rp-npm-${Date.now()}`, {
      'double.js': 'exports.double = (n) => n * 2;\n',
      'double.test.js': TEST_JS,
    });
    expect(run.summary?.state, run.stderr).toBe('COMPLETE');
    expect(run.exitCode).toBe(0);
    expect(lastDod(run)).toMatchObject({
      status: 'passed',
      source: expect.stringMatching(/^detected: package\.json scripts\.test via npm/),
      results: [{ command: 'npm test', status: 'passed' }],
    });
    const setup = run.events.filter((event) => event.type === 'setup_command');
    expect(setup.map((event) => [event.phase, event.exitCode ?? null])).toEqual([
      ['started', null],
      ['finished', 0],
    ]);
    expect(setup[1]?.policy).toBe('allowlist (registry.npmjs.org)');
    expect(run.note).toMatch(
      /## Set-up\n[\s\S]*\| 1 \| `npm ci --no-audit --no-fund` \| allowlist \(registry\.npmjs\.org\) \| ✅ exit 0 \|/,
    );
    expect(run.note).not.toContain('uncommitted changes at the start');
  });

  it('engines.node ">=20": the sandbox gets Node 20+ from the registry and the DoD sees it', async () => {
    const root = realProjectRepo('rp-engines', {
      'package.json': `${JSON.stringify({ name: 'rp-engines', version: '1.0.0', private: true, engines: { node: '>=20 <21' }, scripts: { test: 'node --test' } }, null, 2)}\n`,
    });
    const run = await runRealProject(root, `rp-engines-${Date.now()}`, {
      'version.test.js': `const test = require('node:test');
const assert = require('node:assert');
test('runs on the declared Node', () => {
  assert.strictEqual(process.versions.node.split('.')[0], '20');
});
`,
    });
    expect(run.summary?.state, run.stderr).toBe('COMPLETE');
    expect(lastDod(run)).toMatchObject({
      status: 'passed',
      source: expect.stringMatching(/^detected: package\.json scripts\.test via npm/),
      results: [{ command: 'npm test', status: 'passed' }],
    });
    expect(run.stderr).toMatch(
      /sandbox toolchain: Node 20\.\d+\.\d+ \(package\.json engines\.node: >=20 <21; the image has v18/,
    );
  });
});
