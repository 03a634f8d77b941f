/**
 * Sections 3, 4 and 5: the whole loop with a zero-latency scripted model and a no-op worker.
 * 3: agent-runner's own time per iteration (wall time minus time inside Docker calls), cross-checked by the
 *    same task over a runtime with no Docker at all.
 * 4: N tasks at once: wall time, throughput and peak RSS.
 * 5: the Meta-agent's prompt size per call up to 50 runs, against the same views with no budget.
 */
import type { Config } from '../src/config/schema.js';
import type { SandboxRuntime } from '../src/core/ports.js';
import type { BenchSandboxes } from './bench-sandbox.js';
import { runLoopTask, type PromptSample } from './loop-task.js';
import { execa } from 'execa';
import type { MemoryPeak } from './memory.js';
import { compileBenchEntry } from './compile.js';
import type { ParallelChildInput } from './parallel-child.js';
import { median, round, summarize, type SampleSummary } from './stats.js';
import { InstantRuntime, TimedRuntime } from './timed-runtime.js';

export interface LoopContext {
  runtime: SandboxRuntime;
  sandboxes: BenchSandboxes;
  config: Config;
  scratch: string;
}

export interface LoopOverhead {
  iterations: number;
  repetitions: number;
  /** Median over repetitions of (wall − inside Docker) / iterations. */
  overheadPerIterationMs: number;
  overheadPerIteration: SampleSummary;
  /** Median Docker time per iteration (3 execs, plus create/remove spread over the iterations). */
  dockerPerIterationMs: number;
  /** Median of the whole task's wall time minus Docker time (fixed per-task work included). */
  overheadTotalMs: number;
  /** Median CPU time of this process per iteration (includes the runtime's own client-side work). */
  cpuPerIterationMs: number;
  wallMedianMs: number;
  /** The same task over a runtime with no Docker: wall / iterations. */
  noDockerPerIterationMs: number;
  dockerCalls: Record<string, number>;
  /** Largest prompt sent in the run (estimated tokens). */
  maxPromptTokens: number;
}

const ITERATION_PLAN = [
  { iterations: 1, warmup: 2, counted: 5 },
  { iterations: 10, warmup: 0, counted: 3 },
  { iterations: 50, warmup: 0, counted: 2 },
];

/** Section 3. */
export async function measureLoopOverhead(context: LoopContext): Promise<LoopOverhead[]> {
  const results: LoopOverhead[] = [];
  for (const plan of ITERATION_PLAN) {
    const overheads: number[] = [];
    const docker: number[] = [];
    const walls: number[] = [];
    const totals: number[] = [];
    const cpu: number[] = [];
    const noDocker: number[] = [];
    let calls: Record<string, number> = {};
    let maxPromptTokens = 0;
    for (let index = 0; index < plan.warmup + plan.counted; index += 1) {
      const timed = new TimedRuntime(context.runtime);
      const result = await runLoopTask({
        iterations: plan.iterations,
        runtime: timed,
        spec: context.sandboxes.spec(`loop${plan.iterations}`),
        config: context.config,
        scratch: context.scratch,
      });
      const instant = await runLoopTask({
        iterations: plan.iterations,
        runtime: new InstantRuntime(),
        spec: context.sandboxes.spec(`instant${plan.iterations}`),
        config: context.config,
        scratch: context.scratch,
      });
      if (index < plan.warmup) continue;
      overheads.push((result.wallMs - timed.insideMs) / plan.iterations);
      totals.push(result.wallMs - timed.insideMs);
      cpu.push(result.cpuMs / plan.iterations);
      docker.push(timed.insideMs / plan.iterations);
      walls.push(result.wallMs);
      noDocker.push(instant.wallMs / plan.iterations);
      calls = { ...timed.calls };
      maxPromptTokens = Math.max(maxPromptTokens, ...result.prompts.map((prompt) => prompt.tokens));
    }
    results.push({
      iterations: plan.iterations,
      repetitions: plan.counted,
      overheadPerIterationMs: round(median(overheads)),
      overheadPerIteration: summarize(overheads),
      dockerPerIterationMs: round(median(docker)),
      overheadTotalMs: round(median(totals)),
      cpuPerIterationMs: round(median(cpu)),
      wallMedianMs: round(median(walls)),
      noDockerPerIterationMs: round(median(noDocker)),
      dockerCalls: calls,
      maxPromptTokens,
    });
  }
  return results;
}

/**
 * Per-iteration cost from the slope between task lengths (what one more iteration adds), and the fixed
 * per-task part it implies (set-up, plan call, note): separates "per task" from "per iteration".
 */
export function marginalCosts(loop: readonly LoopOverhead[]): {
  from: number;
  to: number;
  perIterationMs: number;
}[] {
  const pairs: { from: number; to: number; perIterationMs: number }[] = [];
  for (let index = 1; index < loop.length; index += 1) {
    const a = loop[index - 1];
    const b = loop[index];
    if (!a || !b) continue;
    pairs.push({
      from: a.iterations,
      to: b.iterations,
      perIterationMs: round((b.overheadTotalMs - a.overheadTotalMs) / (b.iterations - a.iterations)),
    });
  }
  return pairs;
}

export interface ParallelResult {
  tasks: number;
  iterationsPerTask: number;
  wallMs: number;
  tasksPerMinute: number;
  iterationsPerSecond: number;
  /** Wall time with no Docker call in flight, for all tasks together. */
  outsideDockerMs: number;
  /** Sampled peak over the N-task window; kernel peak (VmHWM) over the child process's whole life. */
  memory: MemoryPeak;
  /** Containers the child found still there at its end (0 when every task removed its sandbox). */
  leftoverContainers: number;
}

/**
 * Section 4: for each N, a fresh child process of compiled JavaScript runs a warm-up task, then N tasks of
 * `iterationsPerTask` runs each, started together (see parallel-child.ts).
 */
export async function measureParallel(
  input: { image: string; runId: string },
  taskCounts: readonly number[],
  iterationsPerTask: number,
): Promise<ParallelResult[]> {
  const compiled = await compileBenchEntry('bench/parallel-child.ts');
  try {
    const results: ParallelResult[] = [];
    for (const tasks of taskCounts) {
      const childInput: ParallelChildInput = { ...input, tasks, iterations: iterationsPerTask };
      const child = await execa(process.execPath, [compiled.entry, JSON.stringify(childInput)], {
        reject: false,
      });
      const line = child.stdout.trim().split('\n').at(-1) ?? '';
      if (child.exitCode !== 0 || !line.startsWith('{')) {
        throw new Error(`the parallel bench child (N = ${tasks}) failed: ${child.stderr.slice(-2000)}`);
      }
      results.push(JSON.parse(line) as ParallelResult);
    }
    return results;
  } finally {
    await compiled.remove();
  }
}

export interface PromptGrowth {
  budgetTokens: number;
  iterations: number;
  /** Per call: runs in the history, bounded size, size of the same views with no budget. */
  calls: (PromptSample & { runsInHistory: number })[];
  maxTokens: number;
  maxUnboundedTokens: number;
  withinBudget: boolean;
}

/** Section 5: one 50-run task with no Docker; a shadow Meta-agent with no budget sees the same views. */
export async function measurePromptGrowth(
  context: Omit<LoopContext, 'runtime'>,
  iterations: number,
): Promise<PromptGrowth> {
  const result = await runLoopTask({
    iterations,
    runtime: new InstantRuntime(),
    spec: context.sandboxes.spec('prompt'),
    config: context.config,
    scratch: context.scratch,
    shadowBudgetTokens: 1_000_000_000,
  });
  let runs = 0;
  const calls = result.prompts.map((prompt) => {
    // Order: plan, then per run next_action (before it) and completion_assessment (after it).
    if (prompt.purpose === 'completion_assessment') runs += 1;
    return { ...prompt, runsInHistory: runs };
  });
  const budgetTokens = context.config.meta.promptBudgetTokens;
  const maxTokens = Math.max(...calls.map((call) => call.tokens));
  return {
    budgetTokens,
    iterations,
    calls,
    maxTokens,
    maxUnboundedTokens: Math.max(...calls.map((call) => call.shadowTokens ?? 0)),
    withinBudget: maxTokens <= budgetTokens,
  };
}
