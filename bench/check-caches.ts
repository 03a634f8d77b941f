/**
 * `npm run bench:check-caches`: repeated checks with and without the checks' sealed caches
 * (src/workspace/checks/check-caches.ts), on a generated Go module (30 files with tests) in the hardened sandbox with
 * Debian's Go layer. "Before": every `go test ./...` starts with an empty cache (a fresh HOME), as checks did.
 * "After": the baseline's run fills the warm cache, the keeper seals it, and each later check starts from a copy.
 * Three checks each, on the same tree (a check after a worker run that changed one file is shown too). Writes
 * bench/results/check-caches.{json,md}. Not part of `npm test`.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { validateConfig } from '../src/config/load.js';
import { resolveWorkerImage } from '../src/app.js';
import { userField } from '../src/sandbox/container-options.js';
import { createDockerClient } from '../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../src/sandbox/docker-runtime.js';
import { resolveTaskImage } from '../src/toolchain/toolchain-image.js';
import { VERSION } from '../src/version.js';
import { sealCheckCaches } from '../src/workspace/checks/check-caches.js';
import { runDodChecks, type CheckCacheMode } from '../src/workspace/checks/dod-checks.js';
import { keeperIdsFor } from '../src/workspace/scope/permissions.js';
import { prepareTaskWorkspace } from '../src/workspace/prepare-task-workspace.js';
import { git } from '../tests/support/task-repo.js';

const FILES = 30;
const RESULTS_DIR = path.join(import.meta.dirname, 'results');
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: VERSION });

async function goModule(): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'bench-check-caches-'));
  await writeFile(path.join(root, 'go.mod'), 'module example.com/calc\n\ngo 1.22\n');
  for (let index = 0; index < FILES; index += 1) {
    const pkg = path.join(root, `p${index % 6}`);
    await mkdir(pkg, { recursive: true });
    const name = `F${index}`;
    await writeFile(
      path.join(pkg, `f${index}.go`),
      `package p${index % 6}\n\nimport (\n\t"fmt"\n\t"strings"\n)\n\nfunc ${name}(s string) string { return fmt.Sprintf("%d:%s", ${index}, strings.ToUpper(s)) }\n`,
    );
    await writeFile(
      path.join(pkg, `f${index}_test.go`),
      `package p${index % 6}\n\nimport "testing"\n\nfunc Test${name}(t *testing.T) {\n\tif ${name}("a") != "${index}:A" {\n\t\tt.Fatal(${name}("a"))\n\t}\n}\n`,
    );
  }
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, '-c', 'user.name=b', '-c', 'user.email=b@x', 'commit', '-q', '-m', 'init');
  return root;
}

async function sandbox(root: string, image: string) {
  const taskId = `bench-cache-${Math.random().toString(16).slice(2, 8)}`;
  const prepared = await prepareTaskWorkspace({
    repoRoot: root,
    taskId,
    scope: { exclude: [], read: [], write: [] },
  });
  const created = await runtime.create({
    taskId,
    repoPath: root,
    image,
    user: prepared.workerUser,
    mounts: prepared.mounts,
    workdir: prepared.workdir,
    env: prepared.env,
    limits: { cpus: 2, memoryBytes: 4 * 1024 ** 3, pids: 1024 },
    network: { mode: 'none' },
    labels: { 'agent-runner.bench': 'check-caches' },
  });
  return { id: created.id, keeper: userField(keeperIdsFor(prepared.workerUser)) };
}

async function check(id: string, mode: CheckCacheMode): Promise<number> {
  const [result] = await runDodChecks(
    runtime,
    id,
    [{ name: 'test', command: 'go test ./...', timeout: 600_000 }],
    { cache: mode, graceMs: 1_000 },
  );
  if (result?.status !== 'passed') throw new Error(`go test failed: ${result?.outputTail}`);
  return result.durationMs;
}

async function main(): Promise<void> {
  const root = await goModule();
  const workerImage = await resolveWorkerImage(validateConfig([]));
  const { image } = await resolveTaskImage({
    docker,
    config: validateConfig([]),
    repoRoot: root,
    workerImage,
    buildWorkerOn: () => Promise.reject(new Error('no project base here')),
  });
  const change = `sed -i 's/strings.ToUpper(s)/strings.ToUpper(s)+""/' p0/f0.go`;
  const rows: { what: string; before: number; after: number }[] = [];
  const before = await sandbox(root, image);
  const after = await sandbox(root, image);
  try {
    const baselineMs = await check(after.id, 'warm');
    const sealed = await sealCheckCaches(runtime, after.id, after.keeper);
    for (let run = 1; run <= 3; run += 1)
      rows.push({
        what: `check ${run} (same tree)`,
        before: await check(before.id, 'use'),
        after: await check(after.id, 'use'),
      });
    for (const box of [before, after])
      await runtime.exec(box.id, ['bash', '-c', change], { workdir: '/workspace', timeoutMs: 30_000 });
    rows.push({
      what: 'check after one file changed',
      before: await check(before.id, 'use'),
      after: await check(after.id, 'use'),
    });
    const seconds = (ms: number) => (ms / 1000).toFixed(1);
    const markdown = [
      `# Repeated checks with the sealed caches (Go, ${FILES} files in 6 packages, \`go test ./...\`)`,
      '',
      `Baseline run (fills the warm cache): ${seconds(baselineMs)} s; sealed cache: ${sealed ?? '?'} KiB.`,
      '',
      '| Check | Before (empty cache) | After (sealed cache) |',
      '|---|---|---|',
      ...rows.map((row) => `| ${row.what} | ${seconds(row.before)} s | ${seconds(row.after)} s |`),
      '',
    ].join('\n');
    await mkdir(RESULTS_DIR, { recursive: true });
    await writeFile(
      path.join(RESULTS_DIR, 'check-caches.json'),
      `${JSON.stringify({ baselineMs, sealed, rows }, null, 2)}\n`,
    );
    await writeFile(path.join(RESULTS_DIR, 'check-caches.md'), markdown);
    process.stdout.write(markdown);
  } finally {
    for (const box of [before, after]) await runtime.remove(box.id).catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  }
}

await main();
