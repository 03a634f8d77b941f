/**
 * The base's build state is reused by later checks and cannot be poisoned by the worker (real Docker, the real
 * clean shell of the checks, the real TypeScript compiler): a three-package `tsc -b` monorepo. The baseline
 * (`warm`) builds every package; after the seal, a check after a one-file change emits only that package's files
 * (`--listEmittedFiles`: no timing). Against a worker that commits a type error and sets the file's mtime into the
 * past so that the build state in the tree says "up to date": the probe shows the attack passing a check that
 * runs on the tree as it is; the check with the sealed build state rebuilds the package and fails.
 */
import { randomUUID } from 'node:crypto';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ExecResult } from '../../src/core/ports.js';
import { userField } from '../../src/sandbox/container-options.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { SEALED_CACHE_DIR, sealCheckCaches } from '../../src/workspace/checks/check-caches.js';
import { runDodChecks, type CheckCacheMode } from '../../src/workspace/checks/dod-checks.js';
import { keeperIdsFor } from '../../src/workspace/scope/permissions.js';
import { prepareTaskWorkspace } from '../../src/workspace/prepare-task-workspace.js';
import { createTempRepo } from '../support/git-repo.js';
import { bashAsWorker, sandboxOverWorkspace } from '../support/sandbox-exec.js';

const IMAGE = process.env.AGENT_RUNNER_TEST_BASE_IMAGE ?? 'agent-runner-base:bookworm';
const TYPESCRIPT = path.join(import.meta.dirname, '../../node_modules/typescript');
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
const taskIds: string[] = [];

afterAll(async () => {
  for (const taskId of taskIds) expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
});

/** Three packages: b references a, c stands alone; a solution tsconfig builds all three. */
function monorepo(): Record<string, string> {
  const files: Record<string, string> = {
    '.gitignore': 'node_modules/\ndist/\n*.tsbuildinfo\n',
    'tsconfig.json': JSON.stringify({
      files: [],
      references: ['a', 'b', 'c'].map((name) => ({ path: `packages/${name}` })),
    }),
  };
  for (const name of ['a', 'b', 'c']) {
    files[`packages/${name}/tsconfig.json`] = JSON.stringify({
      compilerOptions: { composite: true, strict: true, outDir: 'dist', rootDir: 'src', target: 'es2020' },
      ...(name === 'b' ? { references: [{ path: '../a' }] } : {}),
    });
    files[`packages/${name}/src/index.ts`] = `export const ${name} = (n: number): number => n + 1;\n`;
  }
  return files;
}

const BUILD = 'node node_modules/typescript/lib/tsc.js -b --listEmittedFiles';

async function sandbox() {
  const repo = await createTempRepo(monorepo());
  const taskId = `build-${randomUUID().slice(0, 8)}`;
  taskIds.push(taskId);
  const prepared = await prepareTaskWorkspace({
    repoRoot: repo.root,
    taskId,
    scope: { exclude: [], read: [], write: [] },
  });
  // The set-up's output (as `npm ci` would leave it): the compiler, read-only to the worker.
  await cp(TYPESCRIPT, path.join(prepared.sandboxRepoPath, 'node_modules/typescript'), { recursive: true });
  const created = await sandboxOverWorkspace(runtime, {
    taskId,
    repoRoot: repo.root,
    image: IMAGE,
    prepared,
    memoryBytes: 1024 * 1024 * 1024,
    labels: { 'agent-runner.test': 'check-build-state' },
  });
  onTestFinished(() => runtime.remove(created.id));
  const id = created.id;
  const worker = (script: string): Promise<ExecResult> =>
    bashAsWorker(id, script, { runtime, workdir: '/workspace', timeoutMs: 60_000 });
  const check = async (mode: CheckCacheMode | 'none') => {
    const [result] = await runDodChecks(
      runtime,
      id,
      [{ name: 'build', command: BUILD, timeout: 120_000 }],
      mode === 'none' ? { graceMs: 500 } : { cache: mode, graceMs: 500 },
    );
    return result;
  };
  const baselineAndSeal = async () => {
    const baseline = await check('warm');
    expect(baseline?.status).toBe('passed');
    expect(await sealCheckCaches(runtime, id, userField(keeperIdsFor(prepared.workerUser)))).not.toBeNull();
    return baseline?.outputTail ?? '';
  };
  const commit = (script: string) =>
    worker(`${script} && git -c user.name=w -c user.email=w@x commit -qam change`);
  return { worker, check, baselineAndSeal, commit };
}

const emitted = (output: string | undefined) =>
  [...(output ?? '').matchAll(/^TSFILE: \/workspace\/(\S+)$/gm)].map((match) => match[1]).sort();

describe("the base's build state in later checks", () => {
  it('a check after a one-file change rebuilds only the changed package', async () => {
    const box = await sandbox();
    // The probe: the baseline, on a tree with no build state, emits every package.
    expect(emitted(await box.baselineAndSeal())).toEqual([
      'packages/a/dist/index.d.ts',
      'packages/a/dist/index.js',
      'packages/a/tsconfig.tsbuildinfo',
      'packages/b/dist/index.d.ts',
      'packages/b/dist/index.js',
      'packages/b/tsconfig.tsbuildinfo',
      'packages/c/dist/index.d.ts',
      'packages/c/dist/index.js',
      'packages/c/tsconfig.tsbuildinfo',
    ]);
    // The worker's run throws the build state away (as a clean copy would), then changes one file of c.
    const changed = await box.commit(
      "git clean -fdxq -e node_modules && sed -i 's/n + 1/n + 2/' packages/c/src/index.ts",
    );
    expect(changed.exitCode).toBe(0);
    const second = await box.check('use');
    expect(second?.status).toBe('passed');
    expect(emitted(second?.outputTail)).toEqual([
      'packages/c/dist/index.js',
      'packages/c/tsconfig.tsbuildinfo',
    ]);
  });

  it('a type error the worker hides behind an old mtime and its own build state fails the check', async () => {
    const box = await sandbox();
    await box.baselineAndSeal();
    // The worker commits a type error in a, sets the file's mtime before the base's build, and plants its own
    // "no errors" state for a: the base's outputs, as its earlier build left them, newer than the broken file.
    const attack = await box.commit(
      [
        'sed -i \'s/n + 1/n + "1"/\' packages/a/src/index.ts',
        'touch -d 2001-01-01 packages/a/src/index.ts',
        `touch ${SEALED_CACHE_DIR}/build/x 2>/dev/null && echo wrote-cache`,
        `rm -rf ${SEALED_CACHE_DIR}/build.list 2>/dev/null; [ -f ${SEALED_CACHE_DIR}/build.list ] || echo removed-list`,
      ].join('; '),
    );
    expect(attack.exitCode).toBe(0);
    expect(attack.stdoutTail).not.toMatch(/wrote-cache|removed-list/);
    // The probe: on the tree as the worker left it, tsc -b trusts the mtimes and passes the broken commit.
    const poisoned = await box.check('none');
    expect(poisoned?.status).toBe('passed');
    expect(emitted(poisoned?.outputTail)).toEqual([]);
    // With the base's sealed build state, a's input is compared by its content: rebuilt, and the error is seen.
    const honest = await box.check('use');
    expect(honest?.status).toBe('failed');
    expect(honest?.outputTail).toContain("Type 'string' is not assignable to type 'number'");
  });
});
