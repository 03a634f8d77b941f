/**
 * `npm run bench:runtime`: what gVisor (`sandbox.runtime: runsc`) costs against runc, side by side on this
 * engine. Four rows, each the median of a few runs (BENCH_RUNS, default 3), the two runtimes alternating so the
 * machine's drift hits both:
 *   1. sandbox start: a task's hardened container (worker image, no network) created and started, and a first
 *      `true` executed in it;
 *   2. the demo task end to end (examples/slugify with its scripted model, the built CLI, real codex);
 *   3. a real task: the demo on a project with devDependencies and a lockfile: the whole task, and from its
 *      journal its set-up (`npm ci` from the registry through the gateway's proxy) and its DoD check (`npm test`);
 * The load averages are printed beside the figures (other work on the machine skews them). Needs `npm run
 * build`, the worker image and runsc registered (scripts/ensure-runsc.sh). Writes bench/results/runtime.{json,md}.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { resolveWorkerImage } from '../src/compose/docker-side.js';
import { validateConfig } from '../src/config/load.js';
import type { ContainerRuntime } from '../src/core/records.js';
import { createDockerClient } from '../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../src/sandbox/docker-runtime.js';
import { runscProblem, engineRuntimes } from '../src/sandbox/container-runtime.js';
import { writeNpmProject } from '../tests/support/npm-project.js';
import { loadAverage, machineInfo } from './machine.js';
import { runMain } from './run-main.js';
import { median, round } from './stats.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const RUNTIMES: ContainerRuntime[] = ['runc', 'runsc'];
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const REAL_DEV_DEPENDENCIES = { eslint: '8.57.0', mocha: '10.4.0' };

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

interface TaskSample {
  wallMs: number;
  setupMs: number;
  dodMs: number;
  state: string;
}

type Row = 'sandboxStartMs' | 'demoTaskMs' | 'realTaskMs' | 'npmCiMs' | 'dodCheckMs';
type Samples = Record<Row, number[]> & { realStates: string[] };

/** Row 1: a task's hardened container made, started and a first command run in it. */
async function sandboxStart(runtime: DockerSandboxRuntime, image: string, kind: ContainerRuntime) {
  const started = performance.now();
  const info = await runtime.create({
    taskId: `bench-runtime-${kind}`,
    repoPath: '/nonexistent-bench-runtime',
    image,
    user: { uid: 10001, gid: 10001 },
    mounts: [],
    workdir: '/tmp',
    env: {},
    limits: { cpus: 2, memoryBytes: 2 * 1024 ** 3, pids: 256 },
    network: { mode: 'none' },
    runtime: kind,
  });
  try {
    const result = await runtime.exec(info.id, ['true'], { timeoutMs: 60_000 });
    if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode} under ${kind}`);
    return performance.now() - started;
  } finally {
    await runtime.remove(info.id);
  }
}

/** A fresh git repository of `template`. */
function freshRepo(template: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-bench-runtime-'));
  cpSync(template, dir, { recursive: true });
  return dir;
}

async function commitAll(dir: string): Promise<void> {
  const git = (...args: string[]) =>
    execa('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', ...args], { cwd: dir });
  await git('init', '-q', '-b', 'main');
  await git('add', '-A');
  await git('commit', '-q', '-m', 'base');
}

/** Rows 2 and 3: the demo's scripted task run by the built CLI under `kind`, read back from its journal. */
async function taskRun(template: string, kind: ContainerRuntime): Promise<TaskSample> {
  const dir = freshRepo(template);
  try {
    await commitAll(dir);
    const started = performance.now();
    const env: NodeJS.ProcessEnv = { ...process.env, AGENT_RUNNER_RUNTIME: kind, CI: 'true' };
    delete env.OPENAI_API_KEY;
    const result = await execa(
      'node',
      [
        path.join(ROOT, 'bin', 'agent-runner.js'),
        'run',
        '--prd',
        path.join(ROOT, 'examples', 'slugify', 'PRD.md'),
        '--task-id',
        'DEMO-SLUGIFY',
        '--model-script',
        path.join(ROOT, 'examples', 'slugify', 'model-script.yaml'),
        '--json',
      ],
      { cwd: dir, env, reject: false },
    );
    const wallMs = performance.now() - started;
    const events = readFileSync(
      path.join(dir, '.agent-runner', 'runs', 'DEMO-SLUGIFY', 'events.jsonl'),
      'utf8',
    )
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const ran = events.find((event) => event.type === 'sandbox_started') as
      { runtime?: { runtime: string } } | undefined;
    if (ran?.runtime?.runtime !== kind)
      throw new Error(
        `asked for ${kind}, the journal says ${JSON.stringify(ran?.runtime)}: ${result.stderr}`,
      );
    const setupMs = events
      .filter((event) => event.type === 'setup_command' && event.phase === 'finished')
      .reduce((sum, event) => sum + Number(event.durationMs ?? 0), 0);
    // The DoD on the base (the baseline, before any worker run): the same tree under both runtimes.
    const baseline = events.find((event) => event.type === 'baseline') as
      { dod?: { results: { durationMs?: number }[] } } | undefined;
    const dodMs = (baseline?.dod?.results ?? []).reduce((sum, check) => sum + (check.durationMs ?? 0), 0);
    const summary = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as {
      state?: string;
      reason?: string;
    };
    const state =
      summary.state === 'COMPLETE'
        ? 'COMPLETE'
        : `${summary.state ?? `exit ${result.exitCode}`}: ${summary.reason ?? ''}`;
    return { wallMs, setupMs, dodMs, state };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const machine = await machineInfo();
  const docker = createDockerClient();
  const problem = runscProblem(await engineRuntimes(docker));
  if (problem) throw new Error(`${problem}: run scripts/ensure-runsc.sh first`);
  const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-bench' });
  const image = await resolveWorkerImage(validateConfig([]));
  const demo = path.join(ROOT, 'examples', 'slugify', 'repo');
  // The real task's project: the demo with devDependencies and a lockfile resolved from the registry.
  const real = mkdtempSync(path.join(tmpdir(), 'ar-bench-runtime-real-'));
  cpSync(demo, real, { recursive: true });
  progress('resolving the real project lockfile (npm install --package-lock-only)');
  writeNpmProject(real, {
    name: 'slugify-demo',
    scripts: { test: 'node --test' },
    devDependencies: REAL_DEV_DEPENDENCIES,
  });
  writeFileSync(path.join(real, '.gitignore'), 'node_modules/\n');
  const empty = (): Samples => ({
    sandboxStartMs: [],
    demoTaskMs: [],
    realTaskMs: [],
    npmCiMs: [],
    dodCheckMs: [],
    realStates: [],
  });
  const samples: Record<ContainerRuntime, Samples> = { runc: empty(), runsc: empty() };
  const loads: number[][] = [loadAverage()];
  try {
    for (let run = 1; run <= RUNS; run += 1)
      for (const kind of run % 2 === 1 ? RUNTIMES : [...RUNTIMES].reverse()) {
        const into = samples[kind];
        into.sandboxStartMs.push(await sandboxStart(runtime, image, kind));
        const demoRun = await taskRun(demo, kind);
        if (demoRun.state !== 'COMPLETE') throw new Error(`demo under ${kind}: ${demoRun.state}`);
        into.demoTaskMs.push(demoRun.wallMs);
        const realRun = await taskRun(real, kind);
        // The same scripted replies end the real task the same way under both runtimes (it needs more
        // Meta-agent replies than the demo's script holds): its time to that end is compared, and its state shown.
        into.realStates.push(realRun.state.slice(0, 120));
        into.realTaskMs.push(realRun.wallMs);
        into.npmCiMs.push(realRun.setupMs);
        into.dodCheckMs.push(realRun.dodMs);
        loads.push(loadAverage());
        progress(
          `run ${run} ${kind}: start ${round(into.sandboxStartMs.at(-1) ?? 0, 0)} ms, demo ${round(demoRun.wallMs, 0)} ms, real ${round(realRun.wallMs, 0)} ms (npm ci ${round(realRun.setupMs, 0)} ms, DoD ${round(realRun.dodMs, 0)} ms), load ${loads.at(-1)?.join(' ')}`,
        );
      }
  } finally {
    rmSync(real, { recursive: true, force: true });
  }
  const rows: [Row, string][] = [
    ['sandboxStartMs', 'sandbox start (create, start, first exec)'],
    ['demoTaskMs', 'demo task end to end'],
    ['realTaskMs', 'real task: set-up, baseline, a worker run, checks (to its end)'],
    ['npmCiMs', '  of which set-up: npm ci through the gateway proxy'],
    ['dodCheckMs', '  a DoD check run (npm test, on the base)'],
  ];
  const table = rows.map(([key, label]) => {
    const runc = median(samples.runc[key]);
    const runsc = median(samples.runsc[key]);
    return { key, label, runcMs: round(runc, 0), runscMs: round(runsc, 0), ratio: round(runsc / runc, 2) };
  });
  const result = {
    machine: { ...machine, loadAverageAtEnd: loadAverage() },
    runs: RUNS,
    loads,
    realProject: REAL_DEV_DEPENDENCIES,
    table,
    samples,
  };
  const markdown = [
    `Medians of ${RUNS} runs each, runc and runsc alternating; ${machine.cores} cores, Docker ${machine.dockerServer}; load averages (1/5/15 min) ${loads[0]?.join(' ')} at start, ${loadAverage().join(' ')} at end.`,
    '',
    '| | runc | runsc | runsc / runc |',
    '|---|---|---|---|',
    ...table.map((row) => `| ${row.label} | ${row.runcMs} ms | ${row.runscMs} ms | ${row.ratio}× |`),
    '',
  ].join('\n');
  await mkdir(path.join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(path.join(ROOT, 'bench', 'results', 'runtime.json'), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(path.join(ROOT, 'bench', 'results', 'runtime.md'), markdown);
  process.stdout.write(markdown);
}

runMain(main);
