/**
 * Real projects, end to end: the real CLI, codex and sandbox, a scripted model. An npm project with a
 * lockfile and a devDependency (`npm ci` from the registry through the default allowlist proxy), and one whose
 * engines.node asks for a newer Node than the worker image's: each ends COMPLETE with its DoD detected and
 * passed in the sandbox.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { writeNpmProject } from '../support/npm-project.js';
import { lastDod, realProjectRepo, runRealProject } from '../support/real-project-run.js';
import { taskContainers } from '../support/task-containers.js';

const docker = createDockerClient();

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
  it('a failed npm ci: its own error line, the Set-up section, the container kept, and the process exits at once', async () => {
    const root = realProjectRepo(
      'rp-npm-fail',
      {
        '.gitignore': 'node_modules/\n',
        'agent-runner.yaml': 'sandbox:\n  setup: ["npm ci --no-audit --no-fund"]\n',
      },
      (dir) => {
        writeNpmProject(dir, { name: 'rp-npm-fail', devDependencies: { 'is-number': '7.0.0' } });
        // package.json now asks for a package the lockfile does not have: npm ci refuses.
        writeFileSync(
          path.join(dir, 'package.json'),
          JSON.stringify({ name: 'rp-npm-fail', version: '1.0.0', devDependencies: { 'left-pad': '1.3.0' } }),
        );
      },
    );
    const taskId = `rp-npm-fail-${Date.now()}`;
    const run = await runRealProject(root, taskId, { 'unused.txt': 'never written\n' }, ['--keep-sandbox']);
    const kept = await taskContainers(taskId, root);
    onTestFinished(async () => {
      for (const container of kept) await docker.getContainer(container.Id).remove({ force: true });
    });
    expect(run.summary?.state, run.stderr).toBe('FAILED');
    expect(run.exitCode).toBe(4);
    const error = (run.summary?.error ?? {}) as { code?: string; message?: string };
    expect(error.code).toBe('sandbox_failed');
    expect(error.message?.split('\n')[0]).toMatch(
      /npm (ERR!|error) `npm ci` can only install packages when your package\.json and package-lock\.json/,
    );
    expect(error.message).not.toContain('allow what it needs');
    expect(run.note).toMatch(
      /## Set-up\n[\s\S]*\| 1 \| `npm ci --no-audit --no-fund` \| allowlist \(registry\.npmjs\.org\) \| ❌ exit 1 \|/,
    );
    expect(run.note).toContain('<details><summary>npm ci --no-audit --no-fund: output tail</summary>');
    // --keep-sandbox holds on a failed set-up, and the container is marked so later sweeps leave it.
    expect(kept).toHaveLength(1);
    expect(kept[0]?.Labels['agent-runner.keep']).toBe('true');
    // Exits as soon as the note is written, not after a DNS queue drains.
    const finished = run.events.find((event) => event.type === 'setup_command' && event.phase === 'finished');
    expect(run.endedAt - Date.parse(String(finished?.at))).toBeLessThan(20_000);
  });

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
