/**
 * `npm run bench:disk-caps`: what a hard disk cap costs when a task is prepared. The sandbox repository is made
 * through prepareTaskWorkspace, as a run makes it, once with `sandbox.disk.hard` (a sparse ext4 image made,
 * loop-mounted, then the checkout into it) and once without (the watched cap: a plain directory), for a small
 * and a 30,000-file repository, a few times each; prints a table of medians. No container is started: the
 * mount is made before one would be. Also checks that the big repository fits the file system (inodes) and
 * that `git status` works in the mounted sandbox repository. Needs root and loop devices for the hard rows.
 */
import { statfs } from 'node:fs/promises';
import os from 'node:os';
import { execa } from 'execa';
import { capImageBytes, hardCapSupport, mountPoints } from '../src/sandbox/cap-volume.js';
import { prepareTaskWorkspace } from '../src/workspace/prepare-task-workspace.js';
import { removeTaskSandbox } from '../src/workspace/sandbox-repo/remove-task-sandbox.js';
import { defaultScope } from '../src/workspace/scope/scope.js';
import { loadAverage } from './machine.js';
import { settleDisk } from './preparation.js';
import { runMain } from './run-main.js';
import { median, round } from './stats.js';
import { resetSyntheticRepo, syntheticRepo } from './synthetic-repo.js';

const MiB = 1024 ** 2;
/** `sandbox.disk.repository`'s default. */
const CAP_BYTES = 1024 * MiB;

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

interface Sample {
  prepareMs: number;
  sandboxRepositoryMs: number;
  kind: string;
  /** Only for a hard cap: the file system's inodes, used and in all; git status's time; the image's size. */
  inodesUsed?: number;
  inodesTotal?: number;
  gitStatusMs?: number;
  gitStatusClean?: boolean;
  imageMiB?: number;
}

async function prepareOnce(repo: string, taskId: string, hard: boolean, check: boolean): Promise<Sample> {
  let sandboxRepositoryMs = 0;
  await settleDisk();
  const started = performance.now();
  const prepared = await prepareTaskWorkspace({
    repoRoot: repo,
    taskId,
    scope: defaultScope(),
    deferWorktree: true,
    diskCap: { capBytes: CAP_BYTES, hard },
    onStep: (step, ms) => {
      if (step === 'sandbox repository') sandboxRepositoryMs += ms;
    },
  });
  const prepareMs = performance.now() - started;
  await prepared.worktreeReady;
  const sample: Sample = {
    prepareMs,
    sandboxRepositoryMs,
    kind: prepared.repositoryCap?.kind ?? 'none',
  };
  const mounted = (await mountPoints()).includes(prepared.sandboxRepoPath);
  if (hard && (prepared.repositoryCap?.kind !== 'hard' || !mounted))
    throw new Error(
      `no hard cap was made: ${prepared.repositoryCap?.kind === 'watched' ? prepared.repositoryCap.reason : 'not mounted'}`,
    );
  if (check && mounted) {
    const fs = await statfs(prepared.sandboxRepoPath);
    sample.inodesTotal = fs.files;
    sample.inodesUsed = fs.files - fs.ffree;
    const statusStarted = performance.now();
    // The checkout belongs to the guard uid after the permissions pass: host git is told to trust it.
    const status = await execa(
      'git',
      ['-c', `safe.directory=${prepared.sandboxRepoPath}`, 'status', '--porcelain'],
      { cwd: prepared.sandboxRepoPath },
    );
    sample.gitStatusMs = performance.now() - statusStarted;
    sample.gitStatusClean = status.stdout.trim() === '';
    sample.imageMiB = round((await capImageBytes(prepared.sandboxRepoPath)) / MiB, 0);
  }
  // Untimed: the sandbox (and its image) goes, and the repository is as it was for the next sample.
  await removeTaskSandbox(repo, taskId);
  await resetSyntheticRepo(repo);
  return sample;
}

async function main(): Promise<void> {
  const support = await hardCapSupport();
  if (support.kind !== 'hard') throw new Error(`hard caps cannot be made here: ${support.reason}`);
  const sizes = [
    { files: 100, repetitions: Number(process.env.BENCH_REPS_SMALL ?? 7) },
    { files: 30_000, repetitions: Number(process.env.BENCH_REPS_BIG ?? 3) },
  ];
  const loadAtStart = loadAverage();
  const rows: string[] = [];
  const checks: string[] = [];
  for (const size of sizes) {
    const repo = await syntheticRepo({ files: size.files }, progress);
    const figures: Record<'hard' | 'watched', Sample[]> = { hard: [], watched: [] };
    for (let index = 0; index < size.repetitions; index += 1) {
      // Alternated, so load from other work on the machine falls on both alike.
      for (const hard of [true, false]) {
        const label = hard ? 'hard' : 'watched';
        const sample = await prepareOnce(repo, `disk-${label}-${index}`, hard, index === 0);
        figures[label].push(sample);
        progress(`${size.files} files, ${label} (${sample.kind}): ${round(sample.prepareMs, 0)} ms`);
        if (sample.inodesTotal !== undefined)
          checks.push(
            `${size.files} files: ${sample.inodesUsed} of ${sample.inodesTotal} inodes used, ` +
              `image ${sample.imageMiB} MiB allocated on the host, git status ${round(sample.gitStatusMs ?? 0, 0)} ms ` +
              `(${sample.gitStatusClean ? 'clean' : 'NOT clean'})`,
          );
      }
    }
    const hardMs = median(figures.hard.map((sample) => sample.prepareMs));
    const watchedMs = median(figures.watched.map((sample) => sample.prepareMs));
    const hardStep = median(figures.hard.map((sample) => sample.sandboxRepositoryMs));
    const watchedStep = median(figures.watched.map((sample) => sample.sandboxRepositoryMs));
    rows.push(
      `| ${size.files.toLocaleString('en')} | ${size.repetitions} | ${round(watchedMs, 0)} | ${round(hardMs, 0)} | ` +
        `${round(hardMs - watchedMs, 0)} | ${round(watchedStep, 0)} / ${round(hardStep, 0)} |`,
    );
  }
  const lines = [
    `${os.availableParallelism()} cores, ${os.cpus()[0]?.model.trim() ?? 'unknown'}, Linux ${os.release()}, ` +
      `load ${loadAtStart.join(' ')} at start, ${loadAverage().join(' ')} at end; cap ${CAP_BYTES / MiB} MiB`,
    '',
    '| files | runs | watched (ms) | hard (ms) | hard − watched (ms) | checkout step watched / hard (ms) |',
    '| ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
    ...checks.map((check) => `- ${check}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

runMain(main);
