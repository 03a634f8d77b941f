/**
 * `npm run bench:monorepo-dod`: the DoD of a generated TypeScript monorepo (10 packages with project references,
 * `tsc -b`, a `node --test` file per package) in the hardened sandbox, against the same commands on the host.
 * First DoD: the baseline (`warm`) on a tree with no build state, and the host's first build. Second DoD after a
 * one-file change (a function's body in one package): in the sandbox from a clean tree (no build state: what a
 * check cost before the base's build state was kept), and with the base's sealed build state restored
 * (src/workspace/checks/check-caches.ts); on the host, the incremental run. Medians of 3 for the second DoD.
 * Writes bench/results/monorepo-dod.{json,md}. Not part of `npm test`.
 */
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { userField } from '../src/sandbox/container-options.js';
import { createDockerClient } from '../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../src/sandbox/docker-runtime.js';
import { VERSION } from '../src/version.js';
import { sealCheckCaches } from '../src/workspace/checks/check-caches.js';
import { runDodChecks, type CheckCacheMode } from '../src/workspace/checks/dod-checks.js';
import { keeperIdsFor } from '../src/workspace/scope/permissions.js';
import { prepareTaskWorkspace } from '../src/workspace/prepare-task-workspace.js';
import { git } from '../tests/support/task-repo.js';
import { loadAverage, machineInfo } from './machine.js';
import { median } from './stats.js';

const PACKAGES = 10;
const FILES_PER_PACKAGE = 20;
const RUNS = 3;
const IMAGE = process.env.AGENT_RUNNER_BENCH_IMAGE ?? 'agent-runner-base:bookworm';
const TYPESCRIPT = path.join(import.meta.dirname, '../node_modules/typescript');
const RESULTS_DIR = path.join(import.meta.dirname, 'results');
const CHECKS = [
  { name: 'build', command: 'node node_modules/typescript/lib/tsc.js -b', timeout: 900_000 },
  { name: 'test', command: 'node --test packages/*/dist/*.test.js', timeout: 900_000 },
];
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: VERSION });

/** One source file: a class and functions typed against the previous package's exports. */
function sourceFile(pkg: number, file: number): string {
  const dep = pkg > 0 ? `import { Shape${file} as Base } from '@bench/p${pkg - 1}';\n` : '';
  const base = pkg > 0 ? 'Base' : `{ id: number; tags: readonly string[] }`;
  const lines = [
    dep,
    `export interface Shape${file} { id: number; tags: readonly string[]; weight: number }`,
  ];
  lines.push(
    `export class Store${file}<T extends ${base}> {`,
    '  private readonly items = new Map<number, T>();',
  );
  for (let method = 0; method < 12; method += 1)
    lines.push(
      `  m${method}(item: T, factor: number): number {`,
      `    this.items.set(item.id, item);`,
      `    return [...this.items.values()].reduce((sum, value) => sum + value.id * factor + value.tags.length + ${method}, 0);`,
      '  }',
    );
  lines.push('}', `export function f${file}(n: number): number {`, `  return n + ${file};`, '}', '');
  return lines.join('\n');
}

async function monorepo(): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'bench-monorepo-dod-'));
  const write = async (file: string, text: string) => {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), text);
  };
  await write('.gitignore', 'node_modules/\ndist/\n*.tsbuildinfo\n');
  await write(
    'tsconfig.json',
    JSON.stringify({
      files: [],
      references: [...Array(PACKAGES).keys()].map((p) => ({ path: `packages/p${p}` })),
    }),
  );
  for (let pkg = 0; pkg < PACKAGES; pkg += 1) {
    const dir = `packages/p${pkg}`;
    await write(
      `${dir}/tsconfig.json`,
      JSON.stringify({
        compilerOptions: {
          composite: true,
          strict: true,
          target: 'es2022',
          module: 'node16',
          outDir: 'dist',
          rootDir: 'src',
          types: [],
          ...(pkg > 0 ? { paths: { [`@bench/p${pkg - 1}`]: [`../p${pkg - 1}/src/index.ts`] } } : {}),
        },
        ...(pkg > 0 ? { references: [{ path: `../p${pkg - 1}` }] } : {}),
      }),
    );
    await write(`${dir}/package.json`, JSON.stringify({ name: `@bench/p${pkg}`, type: 'commonjs' }));
    const exports: string[] = [];
    for (let file = 0; file < FILES_PER_PACKAGE; file += 1) {
      await write(`${dir}/src/s${file}.ts`, sourceFile(pkg, file));
      exports.push(`export * from './s${file}.js';`);
    }
    await write(`${dir}/src/index.ts`, `${exports.join('\n')}\n`);
    await write(
      `${dir}/src/index.test.ts`,
      [
        // No @types/node in the sandbox: node's modules are required untyped.
        `declare function require(name: string): any;`,
        `import { f1 } from './s1.js';`,
        `require('node:test').test('p${pkg}', () => require('node:assert').strictEqual(f1(1), 2));`,
        '',
      ].join('\n'),
    );
  }
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, '-c', 'user.name=b', '-c', 'user.email=b@x', 'commit', '-q', '-m', 'init');
  return root;
}

/** The one-file change: the body of a function in the middle package (its declarations do not change). */
const changeCommand = (run: number) =>
  `sed -i 's/return n + [0-9]*;/return n + ${100 + run};/' packages/p${PACKAGES / 2}/src/s3.ts`;

async function host(root: string): Promise<{ first: number; incremental: number[] }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-monorepo-host-'));
  await execa('git', ['clone', '-q', root, dir]);
  await mkdir(path.join(dir, 'node_modules'));
  await symlink(TYPESCRIPT, path.join(dir, 'node_modules/typescript'));
  const dod = async () => {
    const started = performance.now();
    for (const check of CHECKS) await execa('bash', ['-c', check.command], { cwd: dir });
    return performance.now() - started;
  };
  try {
    const first = await dod();
    const incremental: number[] = [];
    for (let run = 1; run <= RUNS; run += 1) {
      await execa('bash', ['-c', changeCommand(run)], { cwd: dir });
      incremental.push(await dod());
    }
    return { first, incremental };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function sandbox(root: string) {
  const taskId = `bench-monorepo-${Math.random().toString(16).slice(2, 8)}`;
  const prepared = await prepareTaskWorkspace({
    repoRoot: root,
    taskId,
    scope: { exclude: [], read: [], write: [] },
  });
  // The set-up's output (as `npm ci` would leave it): the compiler.
  await cp(TYPESCRIPT, path.join(prepared.sandboxRepoPath, 'node_modules/typescript'), { recursive: true });
  const created = await runtime.create({
    taskId,
    repoPath: root,
    image: IMAGE,
    user: prepared.workerUser,
    mounts: prepared.mounts,
    workdir: prepared.workdir,
    env: prepared.env,
    limits: { cpus: 2, memoryBytes: 4 * 1024 ** 3, pids: 1024 },
    network: { mode: 'none' },
    labels: { 'agent-runner.bench': 'monorepo-dod' },
  });
  return { id: created.id, keeper: userField(keeperIdsFor(prepared.workerUser)) };
}

async function dod(id: string, mode: CheckCacheMode | 'none'): Promise<number> {
  const results = await runDodChecks(
    runtime,
    id,
    CHECKS,
    mode === 'none' ? { graceMs: 1_000 } : { cache: mode },
  );
  const failed = results.find((result) => result.status !== 'passed');
  if (failed) throw new Error(`${failed.name} failed: ${failed.outputTail}`);
  return results.reduce((sum, result) => sum + result.durationMs, 0);
}

async function main(): Promise<void> {
  const machine = await machineInfo();
  const root = await monorepo();
  const box = await sandbox(root);
  const worker = (script: string) =>
    runtime.exec(box.id, ['bash', '-c', script], { workdir: '/workspace', timeoutMs: 60_000 });
  try {
    const hostRuns = await host(root);
    const firstDod = await dod(box.id, 'warm');
    const sealStarted = performance.now();
    const sealedKiB = await sealCheckCaches(runtime, box.id, box.keeper);
    const sealMs = performance.now() - sealStarted;
    const cleanTree: number[] = [];
    const reused: number[] = [];
    for (let run = 1; run <= RUNS; run += 1) {
      // The worker's change, committed; then the DoD from a tree with no build state, and with the base's.
      await worker(`${changeCommand(run)} && git -c user.name=w -c user.email=w@x commit -qam change`);
      await worker('git clean -fdxq -e node_modules');
      cleanTree.push(await dod(box.id, 'none'));
      reused.push(await dod(box.id, 'use'));
    }
    const result = {
      machine: { ...machine, loadAverageAtEnd: loadAverage() },
      packages: PACKAGES,
      filesPerPackage: FILES_PER_PACKAGE,
      host: hostRuns,
      sandbox: { firstDod, sealMs, sealedKiB, cleanTree, reused },
    };
    const seconds = (ms: number) => (ms / 1000).toFixed(1);
    const ratio = median(reused) / median(hostRuns.incremental);
    const markdown = [
      `# DoD of a TypeScript monorepo (${PACKAGES} packages × ${FILES_PER_PACKAGE + 2} files, \`tsc -b\` + \`node --test\`)`,
      '',
      `${machine.cpuModel}, ${machine.cores} cores, load ${machine.loadAverageAtStart.join(' / ')} at the start, ${result.machine.loadAverageAtEnd.join(' / ')} at the end.`,
      '',
      '| DoD | Host | Sandbox |',
      '|---|---|---|',
      `| first (no build state) | ${seconds(hostRuns.first)} s | ${seconds(firstDod)} s (baseline; seal ${seconds(sealMs)} s, ${sealedKiB ?? '?'} KiB) |`,
      `| second, one file changed, from a clean tree | – | ${seconds(median(cleanTree))} s (${cleanTree.map(seconds).join(' / ')}) |`,
      `| second, one file changed, incremental | ${seconds(median(hostRuns.incremental))} s (${hostRuns.incremental.map(seconds).join(' / ')}) | ${seconds(median(reused))} s (${reused.map(seconds).join(' / ')}) |`,
      '',
      `Second DoD with the base's build state: ${ratio.toFixed(2)}× the host's incremental run.`,
      '',
    ].join('\n');
    await mkdir(RESULTS_DIR, { recursive: true });
    await writeFile(path.join(RESULTS_DIR, 'monorepo-dod.json'), `${JSON.stringify(result, null, 2)}\n`);
    await writeFile(path.join(RESULTS_DIR, 'monorepo-dod.md'), markdown);
    process.stdout.write(markdown);
  } finally {
    await runtime.remove(box.id).catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  }
}

await main();
