/**
 * The cases of tests/integration/integration-sandbox-{python,go}.test.ts (one file each, so they run side by
 * side). The integration sandbox on real projects (real Docker, the toolchain image and set-up a task of each
 * repository gets, detected as `run` detects them): Python with the project installed into a `.venv` by the
 * set-up, and Go from Debian's packages. For each, three heads in a row are checked in the one sandbox brought
 * to each in place (no second set-up): a change that keeps the tests green, then one that breaks them (red,
 * for real), then the repair (green again). The DoD filled the checks' caches on the base.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startDockerSide } from '../../src/compose/docker-side.js';
import { loadConfig } from '../../src/config/load.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { createTempRepo } from './git-repo.js';
import { startIntegrationSandbox } from './integration-sandbox.js';
import { VENV_IGNORE, VENV_PROJECT_FILES } from './python-venv-project.js';
import { taskContainers } from './task-containers.js';

export interface Toolchain {
  name: string;
  base: Record<string, string>;
  /** The file each head changes, and its passing, failing and repaired contents. */
  file: string;
  heads: [string, string, string];
  failure: string;
}

export const PYTHON: Toolchain = {
  name: 'Python in a .venv',
  base: {
    '.gitignore': `__pycache__/\n.pytest_cache/\n${VENV_IGNORE}.agent-runner/\n`,
    ...VENV_PROJECT_FILES,
    'calc.py': 'def add(a, b):\n    return a + b\n',
    'tests/test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
  },
  file: 'calc.py',
  heads: [
    'def add(a, b):\n    return b + a\n',
    'def add(a, b):\n    return a - b\n',
    'def add(a, b):\n    return sum((a, b))\n',
  ],
  failure: 'assert -1 == 5',
};

export const GO: Toolchain = {
  name: "Go from Debian's packages",
  base: {
    '.gitignore': '.agent-runner/\n',
    'go.mod': 'module example.com/calc\n\ngo 1.22\n',
    'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a + b }\n',
    'calc_test.go':
      'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf("Add(2, 3) = %d", got)\n\t}\n}\n',
  },
  file: 'calc.go',
  heads: [
    'package calc\n\nfunc Add(a, b int) int { return b + a }\n',
    'package calc\n\nfunc Add(a, b int) int { return a - b }\n',
    'package calc\n\nfunc Add(a, b int) int { s := a; s += b; return s }\n',
  ],
  failure: 'Add(2, 3) = -1',
};

/** Registers the test of one toolchain: three heads checked in one integration sandbox. */
export function describeHeadsInOneSandbox(toolchain: Toolchain): void {
  const docker = createDockerClient();
  const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
  const ids: { id: string; root: string }[] = [];
  // Kept until afterAll: a container lookup names its repository, which must still be there.
  const repos: { cleanup(): Promise<void> }[] = [];

  afterAll(async () => {
    try {
      for (const { id, root } of ids) expect(await taskContainers(`${id}--integration`, root)).toEqual([]);
    } finally {
      for (const repo of repos) await repo.cleanup();
    }
  });

  describe('the integration sandbox on real projects', () => {
    it(`${toolchain.name}: three heads in one sandbox, green, red for real, green`, async () => {
      const repo = await createTempRepo(toolchain.base, { prefix: 'ar-integ-tc-', autoCleanup: false });
      repos.push(repo);
      const config = await loadConfig({ repoRoot: repo.root, env: {} });
      const side = await startDockerSide(docker, runtime, { config, env: {}, repoRoot: repo.root });
      const { sandbox, id } = await startIntegrationSandbox({
        runtime,
        repoRoot: repo.root,
        config,
        image: side.image,
        setup: side.setup,
        prefix: 'integ-tc',
      });
      ids.push({ id, root: repo.root });
      const results = [];
      for (const [index, content] of toolchain.heads.entries()) {
        const head = await repo.commit(`head ${index + 1}`, { [toolchain.file]: content });
        results.push(await sandbox.check(head, `head ${index + 1}`, []));
      }
      expect(results.map((result) => result.sandbox)).toEqual([
        { reused: true },
        { reused: true },
        { reused: true },
      ]);
      expect(results.map((result) => result.dod.status)).toEqual(['passed', 'failed', 'passed']);
      expect(results[1]?.dod.results[0]?.outputTail).toContain(toolchain.failure);
      const containers = await taskContainers(`${id}--integration`, repo.root);
      expect(containers).toHaveLength(1);
    }, 900_000);
  });
}
