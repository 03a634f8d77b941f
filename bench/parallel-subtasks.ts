/**
 * Parallel work, measured: one PRD split into 4 independent subtasks, run through the real product path
 * (`runProject`: real git, real Docker sandboxes, the gateway, the orchestrator, merges and the combined DoD)
 * with a zero-latency scripted Meta-agent and a worker that commits one file with one `docker exec`. The same
 * project runs with `parallel.max: 4` and with `parallel.max: 1` (the 4 subtasks one after another): wall
 * time of both, agent-runner's peak RSS, and the most containers of the project alive at once.
 *
 * Alone: `node --import tsx bench/parallel-subtasks.ts` (writes bench/results/parallel-subtasks.json and .md);
 * `npm run bench` runs it as its last section.
 */
import { mkdir, writeFile } from 'node:fs/promises';
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
  reviewReply,
  runWorkerReply,
} from '../tests/support/meta-replies.js';
import { createNodeRepo } from '../tests/support/task-repo.js';
import { RssSampler } from './memory.js';
import { round } from './stats.js';

const SUBTASKS = ['s1', 's2', 's3', 's4'];

/** Answers each task from its own queue, found by its task id in the system prompt and the stable part. */
class RoutedScriptedModel implements MetaModel {
  readonly model = 'scripted';
  private readonly queues = new Map<string, string[]>();
  constructor(
    private readonly parentId: string,
    private readonly latencyMs = 0,
  ) {
    this.queues.set(parentId, [
      decompositionReply(
        parentId,
        SUBTASKS.map((id) => ({ id, title: `Write ${id}.txt`, write: [`${id}.txt`] })),
      ),
    ]);
    for (const id of SUBTASKS) {
      const taskId = `${parentId}--${id}`;
      this.queues.set(taskId, [
        runWorkerReply(`Write ${id}.txt and commit it.`),
        assessmentReply(true, ['AC-1'], 'Committed.'),
        reviewReply(taskId),
      ]);
    }
  }
  async complete(messages: readonly MetaMessage[]): Promise<MetaCompletion> {
    const head = messages
      .slice(0, 2)
      .map((message) => message.content)
      .join('\n');
    const key =
      [...this.queues.keys()]
        .filter((taskId) => head.includes(taskId))
        .sort((a, b) => b.length - a.length)[0] ?? this.parentId;
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
  constructor(private readonly runtime: SandboxRuntime) {}
  async run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    const id = /# Task \S+--(s\d):/.exec(request.prompt)?.[1] ?? 'unknown';
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
  max: number;
  /** Added to every Meta-agent call (0: the zero-latency model). */
  modelLatencyMs: number;
  wallMs: number;
  state: string;
  peakRssMiB: number;
  kernelPeakRssMiB: number | null;
  peakContainers: number;
  leftoverContainers: number;
}

export interface ParallelSubtasksResult {
  subtasks: number;
  parallel: ParallelSubtasksRun;
  sequential: ParallelSubtasksRun;
  speedup: number;
  /** The same pair with a model that takes `modelLatencyMs` per call, like a real one. */
  withLatency: { parallel: ParallelSubtasksRun; sequential: ParallelSubtasksRun; speedup: number };
}

async function runOnce(max: number, label: string, latencyMs = 0): Promise<ParallelSubtasksRun> {
  const repo = createNodeRepo();
  const docker = createDockerClient();
  const runtime = new DockerSandboxRuntime(docker, { version: VERSION });
  const taskId = `bench-par-${label}-${Date.now().toString(36)}`;
  const config = validateConfig([{ source: 'bench', values: { parallel: { split: 'auto', max } } }]);
  try {
    const containers = containerPeak(docker, taskId);
    const sampler = new RssSampler(5);
    const startedAt = performance.now();
    const app = createApp(process.env, {
      metaModel: new RoutedScriptedModel(taskId, latencyMs),
      worker: new CommitWorker(runtime),
      runtime,
    });
    const summary = await app.run({
      repoRoot: repo.root,
      prd: '# Four files\n\nWrite s1.txt to s4.txt, each in its own subtask.\n',
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
      max,
      modelLatencyMs: latencyMs,
      wallMs: round(wallMs),
      state: summary.state,
      peakRssMiB: memory.sampledPeakMiB,
      kernelPeakRssMiB: memory.kernelPeakMiB,
      peakContainers,
      leftoverContainers: left,
    };
  } finally {
    repo.remove();
  }
}

/** A call to a real model takes seconds; this is a modest stand-in. */
export const REALISTIC_LATENCY_MS = 5_000;

/** Both runs, parallel first; then both again with a model that takes REALISTIC_LATENCY_MS per call. */
export async function measureParallelSubtasks(): Promise<ParallelSubtasksResult> {
  const parallel = await runOnce(4, 'p4');
  const sequential = await runOnce(1, 'p1');
  const slowParallel = await runOnce(4, 'p4l', REALISTIC_LATENCY_MS);
  const slowSequential = await runOnce(1, 'p1l', REALISTIC_LATENCY_MS);
  return {
    subtasks: SUBTASKS.length,
    parallel,
    sequential,
    speedup: round(sequential.wallMs / parallel.wallMs, 2),
    withLatency: {
      parallel: slowParallel,
      sequential: slowSequential,
      speedup: round(slowSequential.wallMs / slowParallel.wallMs, 2),
    },
  };
}

/** Markdown for the results file and the bench report. */
export function renderParallelSubtasks(result: ParallelSubtasksResult): string {
  const row = (name: string, run: ParallelSubtasksRun) =>
    `| ${name} | ${run.modelLatencyMs / 1000} s | ${run.max} | ${(run.wallMs / 1000).toFixed(1)} s | ${run.peakRssMiB} MiB | ${run.kernelPeakRssMiB ?? '-'} MiB | ${run.peakContainers} | ${run.leftoverContainers} |`;
  return [
    `## Parallel subtasks: ${result.subtasks} independent subtasks, zero-latency scripted model`,
    '',
    '| run | model latency | parallel.max | wall time | peak RSS (sampled) | peak RSS (VmHWM) | containers at peak | left over |',
    '|---|---|---|---|---|---|---|---|',
    row('parallel', result.parallel),
    row('sequential', result.sequential),
    row('parallel', result.withLatency.parallel),
    row('sequential', result.withLatency.sequential),
    '',
    `Speed-up: ${result.speedup}x with the zero-latency model, ${result.withLatency.speedup}x with ${REALISTIC_LATENCY_MS / 1000} s per model call (sequential wall time / parallel wall time). Each run includes planning, ${result.subtasks} sandboxes with a worker run and a DoD each, ${result.subtasks} reviews and merges, and a combined DoD after every merge (those run one at a time by design).`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const result = await measureParallelSubtasks();
  const markdown = renderParallelSubtasks(result);
  const dir = path.join(import.meta.dirname, 'results');
  await mkdir(dir, { recursive: true });
  const jsonFile = path.join(dir, 'parallel-subtasks.json');
  const formatting = (await resolveConfig(jsonFile)) ?? {};
  await writeFile(jsonFile, await format(JSON.stringify(result), { ...formatting, parser: 'json' }));
  await writeFile(
    path.join(dir, 'parallel-subtasks.md'),
    await format(markdown, { ...formatting, parser: 'markdown' }),
  );
  process.stdout.write(`${markdown}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().catch((error: unknown) => {
    process.stderr.write(
      `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
