/**
 * Section 7 of the bench: `agent-runner run` → the first Meta-agent request and the first worker request,
 * on the demo project and on 30,000 files, with `parallel.split: never` and `auto` side by side (a PRD the
 * planner keeps as one task must start no slower when splitting is allowed).
 */
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import type { BenchSandboxes } from './bench-sandbox.js';
import { measureFloor } from './preparation.js';
import type { RawEngine } from './raw-engine.js';
import { measureStartLatency, type StartLatency } from './start-latency.js';
import { resetSyntheticRepo, syntheticRepo } from './synthetic-repo.js';

export async function measureStartSection(
  engine: RawEngine,
  sandboxes: BenchSandboxes,
  scratch: string,
  progress: (message: string) => void,
): Promise<StartLatency[]> {
  const startLatency: StartLatency[] = [];
  const small = await smallRepository(scratch);
  const floorOf = (repo: string) => async () => {
    const measured = await measureFloor(repo, engine, sandboxes);
    return {
      ms: measured.worktreeAddMs + measured.containerStartMs,
      parallelMs: measured.parallelWorktreeAddMs + measured.containerStartMs,
    };
  };
  for (const split of ['never', 'auto'] as const)
    startLatency.push(
      await measureStartLatency(
        small,
        `small (demo project), split ${split}`,
        4,
        scratch,
        floorOf(small),
        split,
      ),
    );
  const big = await syntheticRepo({ files: 30000 }, progress);
  try {
    for (const split of ['never', 'auto'] as const)
      startLatency.push(
        await measureStartLatency(big, `30,000 files, split ${split}`, 30000, scratch, floorOf(big), split),
      );
  } finally {
    await resetSyntheticRepo(big);
  }
  for (const start of startLatency)
    progress(
      `   ${start.label}: Meta-agent ${start.firstMetaRequestMs} ms (median; CPU ${start.firstMetaRequestCpuMs} ms; node -e 0 ${start.nodeFloorMs} ms), ` +
        `worker ${start.firstWorkerRequestMs} ms (median) vs floor ${start.floorMs} ms (${start.workerRatio}x)`,
    );
  return startLatency;
}

/** The demo project as a fresh git repository (the small repository of section 7). */
async function smallRepository(scratch: string): Promise<string> {
  const repo = path.join(scratch, 'small-repo');
  await cp(path.join(import.meta.dirname, '..', 'examples', 'slugify', 'repo'), repo, { recursive: true });
  const git = (args: string[]) =>
    execa('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', ...args], { cwd: repo });
  await git(['init', '-q', '-b', 'main']);
  await git(['add', '-A']);
  await git(['commit', '-q', '-m', 'Initial demo project']);
  return repo;
}
