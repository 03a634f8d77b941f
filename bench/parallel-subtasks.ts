/**
 * Parallel work, measured: one PRD split into N independent subtasks, run through the real product path
 * (`runProject`: real git, real Docker sandboxes, the gateway, the orchestrator, the merge train and the
 * combined checks) with a scripted Meta-agent that takes a fixed time per call and a worker that commits one
 * file with one `docker exec`. Side by side in one run: N = 3 and 4 with 8 s per model call, and N = 4 with a
 * zero-latency model; each with `parallel.max: N` and with `parallel.max: 1` (the same work, one subtask after
 * another). Reported: wall time, the critical path's model time (plan, then one subtask's run_worker and
 * assessment, its review beside the assessment: 3 calls), parallel / critical path, the speed-up, agent-runner's peak RSS, the most
 * containers alive at once, and the machine's load.
 *
 * Alone: `npm run bench:parallel` (writes bench/results/parallel-subtasks.json and .md); `npm run bench` runs
 * it as its last section.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import { format, resolveConfig } from 'prettier';
import { validateConfig } from '../src/config/load.js';
import { ZERO_USAGE } from '../src/core/usage.js';
import type { SandboxRuntime, WorkerAdapter, WorkerRunRequest, WorkerRunResult } from '../src/core/ports.js';
import type { MetaCompletion, MetaMessage, MetaModel } from '../src/meta/meta-model.js';
import { createApp } from '../src/app.js';
import { createDockerClient } from '../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../src/sandbox/docker-runtime.js';
import { VERSION } from '../src/version.js';
import {
  assessmentReply,
  decompositionReply,
  planReply,
  reviewReply,
  runWorkerReply,
} from '../tests/support/meta-replies.js';
import { createNodeRepo } from '../tests/support/task-repo.js';
import { RssSampler } from './memory.js';
import { round } from './stats.js';

/**
 * How a run takes the PRD: `split` (`parallel.split: always`: the planner's subtasks run as subtasks), `auto`
 * (the default: as subtasks when the split pays, else as one task), `single` (`never`: one task, planned so).
 */
type BenchMode = 'split' | 'auto' | 'single';

const subtaskIds = (count: number) => Array.from({ length: count }, (_, index) => `s${index + 1}`);

/** A call to a real model takes seconds: 8 s per call. */
export const MODEL_LATENCY_MS = 8_000;
/**
 * Model calls on a project's critical path: the plan, then one subtask's run_worker and assessment (its review
 * is asked when its checks passed, beside the assessment).
 */
const CRITICAL_CALLS = 3;

/** Answers each task from its own queue, found by its task id in the system prompt and the stable part. */
class RoutedScriptedModel implements MetaModel {
  readonly model = 'scripted';
  private readonly queues = new Map<string, string[]>();
  constructor(
    private readonly parentId: string,
    subtasks: readonly string[],
    private readonly latencyMs = 0,
    mode: BenchMode = 'split',
  ) {
    if (mode === 'single') {
      this.setOneTask(parentId, subtasks, true);
      return;
    }
    // `auto` runs the subtasks as one task when the planner answers at once: the parent's own calls then.
    if (mode === 'auto') this.setOneTask(parentId, subtasks, false);
    this.queues.set(parentId, [
      decompositionReply(
        parentId,
        subtasks.map((id) => ({ id, title: `Write ${id}.txt`, write: [`${id}.txt`] })),
      ),
    ]);
    for (const id of subtasks) {
      const taskId = `${parentId}--${id}`;
      // One queue per kind of call: a subtask's review is asked beside its assessment.
      this.queues.set(`${taskId} next_action`, [runWorkerReply(`Write ${id}.txt and commit it.`)]);
      this.queues.set(`${taskId} completion_assessment`, [assessmentReply(true, ['AC-1'], 'Committed.')]);
      this.queues.set(`${taskId} review`, [reviewReply(taskId)]);
    }
  }
  /**
   * One task doing the same work: the plan (when it plans criteria itself), then one run_worker and one
   * assessment per file. Run as one task from the planner's subtasks, its criteria are theirs (`s1.AC-1`).
   */
  private setOneTask(parentId: string, subtasks: readonly string[], plans: boolean): void {
    const ids = subtasks.map((id) => (plans ? `AC-${id.slice(1)}` : `${id}.AC-1`));
    if (plans)
      this.queues.set(parentId, [
        planReply(
          parentId,
          subtasks.map((id, index) => ({ id: ids[index]!, description: `${id}.txt is committed.` })),
        ),
      ]);
    this.queues.set(
      `${parentId} next_action`,
      subtasks.map((id) => runWorkerReply(`Write ${id}.txt and commit it.`)),
    );
    this.queues.set(
      `${parentId} completion_assessment`,
      subtasks.map((_, index) =>
        index === subtasks.length - 1
          ? assessmentReply(true, ids, 'Committed.')
          : assessmentReply(false, ids, 'More files to write.'),
      ),
    );
  }

  async complete(messages: readonly MetaMessage[]): Promise<MetaCompletion> {
    const head = messages
      .slice(0, 2)
      .map((message) => message.content)
      .join('\n');
    const last = messages.at(-1)?.content ?? '';
    const kind = /Reply with one `(next_action|completion_assessment|review)` message/.exec(last)?.[1];
    const taskId =
      [...new Set([...this.queues.keys()].map((key) => key.split(' ')[0]!))]
        .filter((id) => head.includes(id))
        .sort((a, b) => b.length - a.length)[0] ?? this.parentId;
    const key = kind && this.queues.has(`${taskId} ${kind}`) ? `${taskId} ${kind}` : this.parentId;
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    const text = this.queues.get(key)?.shift();
    if (text === undefined) throw new Error(`bench: no scripted reply left for ${key}`);
    return {
      text,
      model: this.model,
      durationMs: 0,
      usage: ZERO_USAGE,
    };
  }
}

/** Commits `<subtask>.txt` in the sandbox with one exec: the worker's whole cost is Docker's. */
class CommitWorker implements WorkerAdapter {
  readonly type = 'codex';
  private runs = 0;
  constructor(private readonly runtime: SandboxRuntime) {}
  async run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    // A subtask's file is named by its task id; one task doing all the work writes the next file each run.
    this.runs += 1;
    const id = /# Task \S+--(s\d+):/.exec(request.prompt)?.[1] ?? `s${this.runs}`;
    const result = await this.runtime.exec(
      request.sandboxId,
      [
        'bash',
        '-c',
        `echo ${id} > ${id}.txt && git add -A && git -c user.name=bench -c user.email=bench@localhost commit -qm ${id}`,
      ],
      { timeoutMs: request.timeoutMs, graceMs: request.graceMs },
    );
    return {
      exitCode: result.exitCode,
      signal: null,
      timedOut: false,
      interrupted: false,
      oomKilled: false,
      durationMs: result.durationMs,
      threadId: null,
      commands: [],
      fileChanges: [],
      agentMessages: [],
      finalMessage: `Committed ${id}.txt`,
      usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 },
      errors: [],
      unparsedLines: 0,
      failed: result.exitCode !== 0,
    };
  }
}

/** The most containers of the project alive at once, polled every 100 ms. */
function containerPeak(docker: Docker, prefix: string): { stop(): Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const containers = await docker.listContainers({
        all: true,
        filters: { label: ['agent-runner.task'] },
      });
      peak = Math.max(
        peak,
        containers.filter((container) => (container.Labels['agent-runner.task'] ?? '').startsWith(prefix))
          .length,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

export interface ParallelSubtasksRun {
  subtasks: number;
  max: number;
  /** Added to every Meta-agent call (0: the zero-latency model). */
  modelLatencyMs: number;
  wallMs: number;
  state: string;
  peakRssMiB: number;
  kernelPeakRssMiB: number | null;
  peakContainers: number;
  leftoverContainers: number;
  /** The 1-minute load average when the run ended. */
  load: number;
}

/**
 * One comparison: the same project with `parallel.max: N`, with `parallel.max: 1`, and the same work as one task
 * (`parallel.split: never`: one run_worker and one assessment per file).
 */
export interface ParallelSubtasksPair {
  subtasks: number;
  modelLatencyMs: number;
  parallel: ParallelSubtasksRun;
  sequential: ParallelSubtasksRun;
  single: ParallelSubtasksRun;
  /** One task's wall time / parallel wall time. */
  speedupOverSingle: number;
  /** At zero latency: the default (`split: auto`), which runs the subtasks as one task then. */
  auto: ParallelSubtasksRun | null;
  /** The model's time on the critical path: CRITICAL_CALLS calls. */
  criticalPathMs: number;
  /** Parallel wall time / critical path model time (null with a zero-latency model). */
  overCriticalPath: number | null;
  /** Sequential wall time / parallel wall time. */
  speedup: number;
}

export interface ParallelSubtasksResult {
  cpus: number;
  pairs: ParallelSubtasksPair[];
}

export async function runOnce(
  count: number,
  max: number,
  label: string,
  latencyMs = 0,
  mode: BenchMode = 'split',
): Promise<ParallelSubtasksRun> {
  const subtasks = subtaskIds(count);
  const repo = createNodeRepo();
  const docker = createDockerClient();
  const runtime = new DockerSandboxRuntime(docker, { version: VERSION });
  const taskId = `bench-par-${label}-${Date.now().toString(36)}`;
  const split = mode === 'single' ? 'never' : mode === 'auto' ? 'auto' : 'always';
  const config = validateConfig([{ source: 'bench', values: { parallel: { split, max } } }]);
  try {
    const containers = containerPeak(docker, taskId);
    const sampler = new RssSampler(5);
    const startedAt = performance.now();
    const app = createApp(process.env, {
      metaModel: new RoutedScriptedModel(taskId, subtasks, latencyMs, mode),
      worker: new CommitWorker(runtime),
      runtime,
    });
    const summary = await app.run({
      repoRoot: repo.root,
      prd: `# ${count} files\n\nWrite s1.txt to s${count}.txt, each in its own subtask.\n`,
      prdPath: path.join(repo.root, 'PRD.md'),
      taskId,
      config,
      env: { ...process.env, OPENAI_API_KEY: 'bench' },
      keepSandbox: false,
      dodSkipped: false,
      start: { kind: 'new' },
    });
    const wallMs = performance.now() - startedAt;
    const memory = sampler.stop();
    const peakContainers = await containers.stop();
    const left = (
      await docker.listContainers({ all: true, filters: { label: ['agent-runner.task'] } })
    ).filter((container) => (container.Labels['agent-runner.task'] ?? '').startsWith(taskId)).length;
    if (summary.state !== 'COMPLETE')
      throw new Error(`bench: the project ended ${summary.state}: ${summary.reason}`);
    return {
      subtasks: count,
      max,
      modelLatencyMs: latencyMs,
      wallMs: round(wallMs),
      state: summary.state,
      peakRssMiB: memory.sampledPeakMiB,
      kernelPeakRssMiB: memory.kernelPeakMiB,
      peakContainers,
      leftoverContainers: left,
      load: round(loadavg()[0] ?? 0, 2),
    };
  } finally {
    if (process.env.AGENT_RUNNER_BENCH_TIMELINE) {
      printTimeline(path.join(repo.root, '.agent-runner', 'runs', taskId), 'project.jsonl');
      printTimeline(path.join(repo.root, '.agent-runner', 'runs', `${taskId}--s1`), 'events.jsonl');
    }
    repo.remove();
  }
}

/** AGENT_RUNNER_BENCH_TIMELINE=1: each project event's time from the project's start, for finding the waits. */
function printTimeline(runDir: string, journal: string): void {
  const file = path.join(runDir, journal);
  if (!existsSync(file)) return;
  const events = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map(
      (line) =>
        JSON.parse(line) as { type: string; at: string; subtask?: string; state?: string; to?: string },
    );
  const start = Date.parse(events[0]?.at ?? '');
  for (const event of events) {
    if (event.type === 'worker_event') continue;
    const detail = [event.subtask, event.state ?? event.to].filter(Boolean).join(' ');
    process.stderr.write(
      `${((Date.parse(event.at) - start) / 1000).toFixed(2).padStart(7)} ${event.type} ${detail}\n`,
    );
  }
}

async function pair(count: number, latencyMs: number): Promise<ParallelSubtasksPair> {
  const tag = `${count}-${latencyMs / 1000}`;
  const parallel = await runOnce(count, count, `p${tag}`, latencyMs);
  const sequential = await runOnce(count, 1, `s${tag}`, latencyMs);
  const single = await runOnce(count, 1, `o${tag}`, latencyMs, 'single');
  // With a model that answers at once the default runs the subtasks as one task (a split would not pay).
  const auto = latencyMs === 0 ? await runOnce(count, count, `a${tag}`, latencyMs, 'auto') : null;
  const criticalPathMs = CRITICAL_CALLS * latencyMs;
  return {
    subtasks: count,
    modelLatencyMs: latencyMs,
    parallel,
    sequential,
    single,
    speedupOverSingle: round(single.wallMs / parallel.wallMs, 2),
    auto,
    criticalPathMs,
    overCriticalPath: criticalPathMs > 0 ? round(parallel.wallMs / criticalPathMs, 2) : null,
    speedup: round(sequential.wallMs / parallel.wallMs, 2),
  };
}

/** The comparisons, side by side in one run: N = 3 and 4 at MODEL_LATENCY_MS per call, N = 4 at zero latency. */
export async function measureParallelSubtasks(
  onProgress: (line: string) => void = () => {},
): Promise<ParallelSubtasksResult> {
  const pairs: ParallelSubtasksPair[] = [];
  for (const [count, latency] of [
    [3, MODEL_LATENCY_MS],
    [4, MODEL_LATENCY_MS],
    [4, 0],
  ] as const) {
    const measured = await pair(count, latency);
    onProgress(
      `   N=${count}, ${latency / 1000} s per call: parallel ${(measured.parallel.wallMs / 1000).toFixed(1)} s, ` +
        `one after another ${(measured.sequential.wallMs / 1000).toFixed(1)} s (${measured.speedup}x), ` +
        `one task ${(measured.single.wallMs / 1000).toFixed(1)} s (${measured.speedupOverSingle}x)` +
        (measured.auto ? `, split: auto ${(measured.auto.wallMs / 1000).toFixed(1)} s` : '') +
        (measured.overCriticalPath === null ? '' : `, ${measured.overCriticalPath}x the critical path`),
    );
    pairs.push(measured);
  }
  return { cpus: cpus().length, pairs };
}

/** Markdown for the results file and the bench report. */
export function renderParallelSubtasks(result: ParallelSubtasksResult): string {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const row = (entry: ParallelSubtasksPair) =>
    `| ${entry.subtasks} | ${entry.modelLatencyMs / 1000} s | ${entry.criticalPathMs ? seconds(entry.criticalPathMs) : '-'} | ${seconds(entry.parallel.wallMs)} | ${entry.overCriticalPath ?? '-'}${entry.overCriticalPath === null ? '' : 'x'} | ${seconds(entry.sequential.wallMs)} | ${entry.speedup}x | ${seconds(entry.single.wallMs)} | ${entry.speedupOverSingle}x | ${entry.parallel.peakRssMiB} MiB | ${entry.parallel.peakContainers} | ${entry.parallel.leftoverContainers + entry.sequential.leftoverContainers + entry.single.leftoverContainers} | ${entry.parallel.load} / ${entry.sequential.load} / ${entry.single.load} |`;
  return [
    `## Parallel subtasks: N independent subtasks (\`parallel.split: always\`), scripted model, ${result.cpus} CPUs`,
    '',
    '| N | model call | critical path (model) | parallel (max N) | parallel / critical path | one after another (max 1) | speed-up | one task (split: never) | speed-up | peak RSS | containers at peak | left over | load (par / seq / one) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...result.pairs.map(row),
    '',
    ...result.pairs
      .filter((entry) => entry.auto)
      .map(
        (entry) =>
          `With the zero-latency model and N = ${entry.subtasks}, the default (\`parallel.split: auto\`) runs the subtasks as one task (the planner answered in under a second): ${seconds(entry.auto!.wallMs)}, against ${seconds(entry.single.wallMs)} for one task planned so and ${seconds(entry.parallel.wallMs)} for the subtasks at once (\`always\`).`,
      ),
    '',
    `Each run includes planning, N sandboxes with a worker run and a DoD each, N reviews, the merge train and its combined checks (DoD and every merged subtask's criteria). The critical path is ${CRITICAL_CALLS} model calls: the plan, then one subtask's run_worker and assessment (its review is asked beside the assessment, once its checks passed). One task doing the same work takes the plan and one run_worker and one assessment per file, in one sandbox.`,
    '',
  ].join('\n');
}

/** `npm run bench:parallel`: this section alone. */
async function main(): Promise<void> {
  const result = await measureParallelSubtasks((line) => process.stderr.write(`${line}\n`));
  const dir = path.join(import.meta.dirname, 'results');
  await mkdir(dir, { recursive: true });
  const formatting = (await resolveConfig(path.join(dir, 'parallel-subtasks.json'))) ?? {};
  await writeFile(
    path.join(dir, 'parallel-subtasks.json'),
    await format(JSON.stringify(result), { ...formatting, parser: 'json' }),
  );
  await writeFile(
    path.join(dir, 'parallel-subtasks.md'),
    await format(renderParallelSubtasks(result), { ...formatting, parser: 'markdown' }),
  );
  process.stdout.write(renderParallelSubtasks(result));
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) await main();
