/**
 * Section 4, in a fresh process of compiled JavaScript (see compile.ts): one warm-up task, then `tasks` tasks
 * of `iterations` runs each started together. Prints one JSON line (a ParallelResult) on stdout. The peak RSS
 * is this process's: the sampled peak over the N-task window and the kernel's VmHWM over its whole life
 * (start-up and warm-up included).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { validateConfig } from '../src/config/load.js';
import { createDockerClient } from '../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../src/sandbox/docker-runtime.js';
import { VERSION } from '../src/version.js';
import { benchSandboxes } from './bench-sandbox.js';
import type { ParallelResult } from './loop-benchmarks.js';
import { runLoopTask } from './loop-task.js';
import { peakRssFromKernel, RssSampler } from './memory.js';
import { round } from './stats.js';
import { TimedRuntime } from './timed-runtime.js';

export interface ParallelChildInput {
  tasks: number;
  iterations: number;
  image: string;
  runId: string;
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '{}') as ParallelChildInput;
  const client = createDockerClient();
  const runtime = new DockerSandboxRuntime(client, { version: VERSION });
  const config = validateConfig([]);
  const sandboxes = await benchSandboxes(input.runId, input.image);
  const scratch = await mkdtemp(path.join(tmpdir(), 'agent-runner-bench-child-'));
  try {
    const context = { config, scratch };
    // Warm-up: module loading and JIT are not charged to the measured window.
    await runLoopTask({ ...context, iterations: 1, runtime, spec: sandboxes.spec('parallel-warmup') });
    const timed = new TimedRuntime(runtime);
    const sampler = new RssSampler(5, { resetKernelPeak: false });
    const startedAt = performance.now();
    await Promise.all(
      Array.from({ length: input.tasks }, () =>
        runLoopTask({
          ...context,
          iterations: input.iterations,
          runtime: timed,
          spec: sandboxes.spec(`parallel${input.tasks}`),
        }),
      ),
    );
    const wallMs = performance.now() - startedAt;
    const memory = sampler.stop();
    const kernelPeak = peakRssFromKernel();
    const result: ParallelResult = {
      tasks: input.tasks,
      iterationsPerTask: input.iterations,
      wallMs: round(wallMs),
      tasksPerMinute: round((input.tasks / wallMs) * 60_000),
      iterationsPerSecond: round(((input.tasks * input.iterations) / wallMs) * 1000),
      outsideDockerMs: round(wallMs - timed.insideMs),
      memory: {
        ...memory,
        kernelPeakMiB: kernelPeak === null ? null : round(kernelPeak / 1024 / 1024, 1),
      },
      leftoverContainers: await sandboxes.cleanup(client),
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
