/**
 * The repository-size series: agent-runner's preparation of a task (snapshot, sandbox repository, scope
 * permissions, the person's worktree) plus the sandbox's start, against the floor of the same work done the
 * cheapest way (`git worktree add` of the same commit, then a container created and started through the
 * Engine API directly). Also a second task and a re-preparation (resume) in the same repository.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import type { SandboxRuntime } from '../src/core/ports.js';
import { defaultScope } from '../src/workspace/scope/scope.js';
import {
  prepareTaskWorkspace,
  type PreparationStep,
  type PreparedWorkspace,
} from '../src/workspace/prepare-task-workspace.js';
import type { BenchSandboxes } from './bench-sandbox.js';
import type { RawEngine } from './raw-engine.js';
import { median, round } from './stats.js';
import { resetSyntheticRepo, syntheticRepo } from './synthetic-repo.js';

/**
 * Writes back what the previous step left dirty in the page cache (untimed), so each timed step pays for its
 * own writes, not for the flush of the checkout before it.
 */
export async function settleDisk(): Promise<void> {
  await execa('sync');
}

export interface PreparationRow {
  files: number;
  /** `git worktree add` of the same commit. */
  worktreeAddMs: number;
  /** The same with git's parallel checkout (reported, not the target's floor). */
  parallelWorktreeAddMs: number;
  /** Container create + start through the Engine API directly. */
  containerStartMs: number;
  floorMs: number;
  /** prepareTaskWorkspace with the sandbox started alongside: everything before the first worker request but the worker. */
  preparationMs: number;
  /** The same for a second task in the same repository (which holds the first task). */
  secondTaskMs: number;
  /** Preparing the first task again (a resume: branch, worktree and sandbox repository reused). */
  resumeMs: number;
  steps: Partial<Record<PreparationStep | 'container start', number>>;
  ratio: number;
}

/** `git worktree add` of HEAD into a fresh directory, timed; removed afterwards, untimed. */
async function timedWorktreeAdd(repo: string, config: string[]): Promise<number> {
  const directory = await mkdtemp(path.join(tmpdir(), 'agent-runner-bench-worktree-'));
  const target = path.join(directory, 'wt');
  await settleDisk();
  const started = performance.now();
  await execa('git', [...config, 'worktree', 'add', '-q', '--detach', target, 'HEAD'], { cwd: repo });
  const ms = performance.now() - started;
  await execa('git', ['worktree', 'remove', '--force', target], { cwd: repo });
  await rm(directory, { recursive: true, force: true });
  return ms;
}

/**
 * The floor of preparing a task in `repo`, as the issue defines it: `git worktree add` of HEAD (git's
 * defaults), then a container created and started through the Engine API directly. Also timed, for the
 * report only: the same `git worktree add` with git's parallel checkout (`checkout.workers=0`, which
 * agent-runner's own checkouts use), the stricter floor on a machine with more than one core.
 */
export async function measureFloor(repo: string, engine: RawEngine, sandboxes: BenchSandboxes) {
  const worktreeAddMs = await timedWorktreeAdd(repo, []);
  const parallelWorktreeAddMs = await timedWorktreeAdd(repo, ['-c', 'checkout.workers=0']);
  const spec = sandboxes.spec('floor');
  await settleDisk();
  const containerStarted = performance.now();
  const id = await engine.createAndStart(sandboxes.createOptions(spec));
  const containerStartMs = performance.now() - containerStarted;
  await engine.remove(id);
  return { worktreeAddMs, parallelWorktreeAddMs, containerStartMs };
}

async function prepareAndStart(
  repo: string,
  taskId: string,
  runtime: SandboxRuntime,
  sandboxes: BenchSandboxes,
  steps?: PreparationRow['steps'],
): Promise<{ ms: number; prepared: PreparedWorkspace }> {
  await settleDisk();
  const started = performance.now();
  // As a run does: the container is created and started as soon as the workspace is mountable, while the
  // files are checked out into it; the sandbox is ready when both are done.
  let creating: Promise<{ id: string }> | null = null;
  const preparing = prepareTaskWorkspace({
    repoRoot: repo,
    taskId,
    scope: defaultScope(),
    // As a run prepares: the person's worktree is checked out in the background, off the way to the first
    // worker request (the first sync-back waits for it). Awaited below, outside the measured time, so the
    // next measurement starts on a quiet machine.
    deferWorktree: true,
    onStep: (step, ms) => {
      if (steps) steps[step] = round((steps[step] ?? 0) + ms);
    },
    onMountable: (mount) => {
      const spec = { ...sandboxes.spec('prepare'), mounts: mount.mounts, env: mount.env };
      const containerStarted = performance.now();
      creating = runtime.create(spec).then((sandbox) => {
        if (steps) steps['container start'] = round(performance.now() - containerStarted);
        return sandbox;
      });
    },
  });
  const [prepared, sandbox] = await Promise.all([
    preparing,
    preparing.then(() => {
      if (!creating) throw new Error('the preparation never said the workspace was mountable');
      return creating;
    }),
  ]);
  const ms = performance.now() - started;
  await prepared.worktreeReady;
  await runtime.remove(sandbox.id);
  return { ms, prepared };
}

/**
 * One row of the series, `repetitions` times from a pristine repository (medians): the floor and a first task
 * (alternating which goes first), then a second task in the same repository and the first prepared again (a
 * resume).
 */
export async function measurePreparation(
  files: number,
  context: { runtime: SandboxRuntime; engine: RawEngine; sandboxes: BenchSandboxes },
  log: (message: string) => void,
  // Small repositories take well under a second per sample, and there the machine's noise is as large as
  // the work: more samples for a steadier median.
  repetitions = files <= 10_000 ? 6 : 2,
): Promise<PreparationRow> {
  const repo = await syntheticRepo({ files }, log);
  // Warm the page cache for both sides alike: the floor and the preparation read the same objects.
  await execa('git', ['cat-file', '--batch-all-objects', '--batch-check'], { cwd: repo });
  const worktreeAdd: number[] = [];
  const parallelWorktreeAdd: number[] = [];
  const containerStart: number[] = [];
  const firsts: number[] = [];
  const seconds: number[] = [];
  const resumes: number[] = [];
  let steps: PreparationRow['steps'] = {};
  for (let index = 0; index < repetitions; index += 1) {
    if (index > 0) await resetSyntheticRepo(repo);
    const floorFirst = index % 2 === 0;
    const runFloor = async () => {
      const measured = await measureFloor(repo, context.engine, context.sandboxes);
      worktreeAdd.push(measured.worktreeAddMs);
      parallelWorktreeAdd.push(measured.parallelWorktreeAddMs);
      containerStart.push(measured.containerStartMs);
    };
    if (floorFirst) await runFloor();
    steps = {};
    firsts.push((await prepareAndStart(repo, 'bench-first', context.runtime, context.sandboxes, steps)).ms);
    if (!floorFirst) await runFloor();
    // In the same repetition, so a drift in the machine's load hits the first task and the later ones alike:
    // a second task in the repository that now holds the first, then the first prepared again (a resume).
    seconds.push((await prepareAndStart(repo, 'bench-second', context.runtime, context.sandboxes)).ms);
    resumes.push((await prepareAndStart(repo, 'bench-first', context.runtime, context.sandboxes)).ms);
  }
  await resetSyntheticRepo(repo);
  const floorMs = median(worktreeAdd) + median(containerStart);
  const preparationMs = median(firsts);
  return {
    files,
    worktreeAddMs: round(median(worktreeAdd)),
    parallelWorktreeAddMs: round(median(parallelWorktreeAdd)),
    containerStartMs: round(median(containerStart)),
    floorMs: round(floorMs),
    preparationMs: round(preparationMs),
    secondTaskMs: round(median(seconds)),
    resumeMs: round(median(resumes)),
    steps,
    ratio: round(preparationMs / floorMs, 2),
  };
}
