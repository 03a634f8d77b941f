import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { locatedTestCommand } from '../../src/workspace/checks/criteria-checks.js';
import { passedTestCount } from '../../src/workspace/checks/test-counts.js';
import {
  testLocations,
  workspacePackages,
  type TreeReader,
} from '../../src/workspace/checks/test-location.js';

/** A tree held in memory: the reader detection uses, over plain file texts. */
function tree(files: Record<string, string>): TreeReader {
  return { files: Object.keys(files), read: async (file) => files[file] ?? null };
}

const vitestPackage = JSON.stringify({ name: 'a', devDependencies: { vitest: '4' } });

describe('where a named test runs', () => {
  it('finds the packages of npm/yarn and pnpm workspaces, exclusions and node_modules left out', async () => {
    const files = {
      'package.json': JSON.stringify({ workspaces: ['packages/*', 'apps/web'] }),
      'packages/a/package.json': '{}',
      'packages/b/package.json': '{}',
      'packages/b/node_modules/x/package.json': '{}',
      'apps/web/package.json': '{}',
      'apps/other/package.json': '{}',
    };
    expect(await workspacePackages(tree(files))).toEqual(['apps/web', 'packages/a', 'packages/b']);
    const pnpm = {
      'package.json': '{"private":true}',
      'pnpm-workspace.yaml': "packages:\n  - 'packages/**'\n  - '!packages/legacy'\n",
      'packages/a/package.json': '{}',
      'packages/nested/deep/package.json': '{}',
      'packages/legacy/package.json': '{}',
    };
    expect(await workspacePackages(tree(pnpm))).toEqual(['packages/a', 'packages/nested/deep']);
    // yarn's object form
    expect(
      await workspacePackages(
        tree({
          'package.json': JSON.stringify({ workspaces: { packages: ['libs/*'] } }),
          'libs/x/package.json': '{}',
        }),
      ),
    ).toEqual(['libs/x']);
  });

  it('a framework only in the packages: each package that declares one, not "no framework"', async () => {
    const files = {
      'package.json': JSON.stringify({ private: true, scripts: { test: 'pnpm -r test' } }),
      'pnpm-workspace.yaml': 'packages: [packages/*]\n',
      'packages/a/package.json': vitestPackage,
      'packages/b/package.json': JSON.stringify({ scripts: { test: 'node --test' } }),
      'packages/docs/package.json': '{"name":"docs"}',
    };
    expect(await testLocations(tree(files))).toEqual([
      { dir: 'packages/a', framework: 'vitest' },
      { dir: 'packages/b', framework: 'node:test' },
    ]);
    // With its file: the nearest directory above it that declares a framework.
    expect(await testLocations(tree(files), 'packages/a/src/deep/x.test.ts')).toEqual([
      { dir: 'packages/a', framework: 'vitest' },
    ]);
    // A file in a package that declares nothing: up to the root, which declares nothing either.
    expect(await testLocations(tree(files), 'packages/docs/x.test.ts')).toEqual([]);
  });

  it('the root first when it declares a framework; go and cargo modules below the root by file', async () => {
    const files = {
      'package.json': JSON.stringify({ devDependencies: { jest: '29' }, workspaces: ['packages/*'] }),
      'packages/a/package.json': vitestPackage,
      'services/api/go.mod': 'module api\n',
      'services/api/handler_test.go': 'package api\n',
    };
    expect(await testLocations(tree(files))).toEqual([{ dir: '', framework: 'jest' }]);
    expect(await testLocations(tree(files), 'services/api/handler_test.go')).toEqual([
      { dir: 'services/api', framework: 'go test' },
    ]);
    expect(await testLocations(tree(files), 'test/x.test.js')).toEqual([{ dir: '', framework: 'jest' }]);
  });
});

/** Runs a located command with bash in `cwd` (vitest's own colour settings pass on: counts read past them). */
function bash(command: string, cwd: string) {
  const result = spawnSync('bash', ['--noprofile', '--norc', '-c', command], { cwd, encoding: 'utf8' });
  return { exitCode: result.status, output: `${result.stdout}\n${result.stderr}` };
}

function workspace(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'ar-located-'));
  onTestFinished(() => rmSync(root, { recursive: true, force: true }));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

describe('the located command, run for real', () => {
  it('runs vitest from a package with the binary hoisted to the root (npm workspaces)', () => {
    const root = workspace({
      'package.json': JSON.stringify({ private: true, workspaces: ['packages/*'] }),
      'packages/a/package.json': vitestPackage,
      'packages/a/src/sum.test.js':
        "import { test, expect } from 'vitest';\ntest('adds numbers', () => expect(1 + 1).toBe(2));\ntest('other', () => expect(1).toBe(1));\n",
    });
    // The hoisted install: vitest exists only in the root's node_modules.
    symlinkSync(path.resolve('node_modules'), path.join(root, 'node_modules'));
    const command = locatedTestCommand(
      [{ dir: 'packages/a', framework: 'vitest' }],
      'adds numbers',
      'packages/a/src/sum.test.js',
    );
    const result = bash(command, root);
    expect(result.exitCode, result.output).toBe(0);
    expect(passedTestCount('vitest', result.output)).toBe(1);
  }, 60_000);

  it('runs each package and keeps the first failure, so a passing package does not hide it', () => {
    const testFile = (ok: boolean) =>
      `const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds numbers', () => assert.ok(${ok}));\n`;
    const root = workspace({
      'package.json': JSON.stringify({ private: true, workspaces: ['packages/*'] }),
      'packages/a/package.json': JSON.stringify({ scripts: { test: 'node --test' } }),
      'packages/a/test/a.test.js': testFile(false),
      'packages/b/package.json': JSON.stringify({ scripts: { test: 'node --test' } }),
      'packages/b/test/b.test.js': testFile(true),
    });
    const locations = [
      { dir: 'packages/a', framework: 'node:test' as const },
      { dir: 'packages/b', framework: 'node:test' as const },
    ];
    const failing = bash(locatedTestCommand(locations, 'adds numbers'), root);
    expect(failing.exitCode).toBe(1);
    expect(passedTestCount('node:test', failing.output)).toBe(1);
    writeFileSync(path.join(root, 'packages/a/test/a.test.js'), testFile(true));
    const passing = bash(locatedTestCommand(locations, 'adds numbers'), root);
    expect(passing.exitCode, passing.output).toBe(0);
    expect(passedTestCount('node:test', passing.output)).toBe(2);
  }, 60_000);
});
