/** The results file's shape, the targets, and the Markdown rendering of both. */
import {
  marginalCosts,
  type LoopOverhead,
  type ParallelResult,
  type PromptGrowth,
} from './loop-benchmarks.js';
import type { MachineInfo } from './machine.js';
import type { PreparationRow } from './preparation.js';
import type { Comparison } from './sandbox-comparison.js';
import type { SetupInstallResult } from './setup-install.js';
import type { StartLatency } from './start-latency.js';
import { round, type SampleSummary } from './stats.js';

export interface TargetCheck {
  name: string;
  target: string;
  measured: string;
  met: boolean;
}

export interface BenchResults {
  machine: MachineInfo;
  image: string;
  durationSeconds: number;
  dockerCliStart: SampleSummary;
  /** What `docker inspect` showed on both sides (checked equal before timing). */
  hardening: Record<string, unknown>;
  sandbox: { create: Comparison; remove: Comparison; exec: Comparison };
  /** The same operations against the Engine API called directly (the floor). */
  rawApi: { create: Comparison; exec: Comparison };
  /** The repository-size series. */
  preparation: PreparationRow[];
  /** `run` → first Meta-agent request and → first worker request. */
  startLatency: StartLatency[];
  loop: LoopOverhead[];
  parallel: ParallelResult[];
  prompt: PromptGrowth;
  /** `npm ci` in sandbox.setup under allowlist vs open. */
  setupInstall?: SetupInstallResult;
  targets: TargetCheck[];
  /** Bench containers still present at the end (removed then); 0 when every path cleaned up. */
  leftoverContainers: number;
}

/** The issue's targets against the figures. */
export function checkTargets(results: Omit<BenchResults, 'targets'>): TargetCheck[] {
  const { create, exec } = results.sandbox;
  const checks: TargetCheck[] = [
    {
      name: '1a. create + start vs raw Engine API',
      target: '≤ 1.2×',
      measured: `${results.rawApi.create.ratio}×`,
      met: results.rawApi.create.ratio <= 1.2,
    },
    {
      name: '2a. exec `true` vs raw Engine API',
      target: '≤ 1.2×',
      measured: `${results.rawApi.exec.ratio}×`,
      met: results.rawApi.exec.ratio <= 1.2,
    },
    {
      name: '1. create + start vs docker run -d',
      target: '≤ 1.3×',
      measured: `${create.ratio}×`,
      met: create.ratio <= 1.3,
    },
    {
      name: '2. exec `true` vs docker exec',
      target: '≤ 1.3×',
      measured: `${exec.ratio}×`,
      met: exec.ratio <= 1.3,
    },
  ];
  for (const loop of results.loop) {
    checks.push({
      name: `3. loop overhead beyond Docker, ${loop.iterations} iteration(s)`,
      target: '≤ 50 ms/iteration',
      measured: `${loop.overheadPerIterationMs} ms`,
      met: loop.overheadPerIterationMs <= 50,
    });
  }
  const eight = results.parallel.find((result) => result.tasks === 8);
  if (eight) {
    const peak = Math.max(eight.memory.sampledPeakMiB, eight.memory.kernelPeakMiB ?? 0);
    checks.push({
      name: '4. peak RSS at N = 8',
      target: '≤ 150 MB',
      measured: `${peak} MiB`,
      met: peak * 1.048576 <= 150,
    });
  }
  checks.push({
    name: '5. Meta-agent prompt at 50 runs',
    target: `≤ budget (${results.prompt.budgetTokens} tokens)`,
    measured: `max ${results.prompt.maxTokens} tokens (unbounded: ${results.prompt.maxUnboundedTokens})`,
    met: results.prompt.withinBudget,
  });
  for (const row of results.preparation) {
    checks.push({
      name: `6. preparation at ${row.files.toLocaleString('en')} files vs floor`,
      target: '≤ 2×',
      measured: `${Math.round(row.preparationMs)} vs ${Math.round(row.floorMs)} ms: ${row.ratio}×`,
      met: row.ratio <= 2,
    });
    // "No more than the first", with room for this machine's noise between single samples.
    const later = Math.max(row.secondTaskMs, row.resumeMs);
    checks.push({
      name: `6b. second task and resume at ${row.files.toLocaleString('en')} files vs first`,
      target: '≤ 1.2×',
      measured: `${Math.round(row.secondTaskMs)} / ${Math.round(row.resumeMs)} vs ${Math.round(row.preparationMs)} ms`,
      met: later <= row.preparationMs * 1.2,
    });
  }
  for (const start of results.startLatency) {
    checks.push({
      name: `7. run → first Meta-agent request, ${start.label}`,
      target: '≤ 500 ms',
      measured: `${Math.round(start.firstMetaRequestMs)} ms (median of ${start.metaSamplesMs.length}; ${round(start.firstMetaRequestMs / 500)}× the target; node -e 0 ${Math.round(start.nodeFloorMs)} ms)`,
      met: start.firstMetaRequestMs <= 500,
    });
  }
  // The issue's own target is at 30,000 files; the small repository's ratio is printed in section 7.
  for (const start of results.startLatency.filter((latency) => latency.files >= 30_000)) {
    checks.push({
      name: `7b. run → first worker request, ${start.label}, vs worktree add + container start`,
      target: '≤ 2×',
      measured: `${Math.round(start.firstWorkerRequestMs)} vs ${Math.round(start.floorMs)} ms: ${start.workerRatio}× (medians of ${start.workerSamplesMs.length}; against a parallel-checkout worktree add ${start.parallelWorkerRatio}×)`,
      met: start.workerRatio <= 2,
    });
  }
  // Splitting must cost a single task nothing: with `parallel.split: auto`, a PRD the planner keeps as one task
  // starts as fast as with `never` (the same runs, medians; 15 % or 50 ms of room for this machine's noise).
  for (const auto of results.startLatency.filter((latency) => latency.split === 'auto')) {
    const never = results.startLatency.find(
      (latency) => latency.split === 'never' && latency.files === auto.files,
    );
    if (!never) continue;
    const noSlower = (a: number, n: number) => a <= Math.max(n * 1.15, n + 50);
    checks.push({
      name: `7c. split auto vs never at ${auto.files.toLocaleString('en')} files: first Meta-agent / worker request`,
      target: '≤ never (+15 % or 50 ms noise)',
      measured: `${Math.round(auto.firstMetaRequestMs)} vs ${Math.round(never.firstMetaRequestMs)} ms / ${Math.round(auto.firstWorkerRequestMs)} vs ${Math.round(never.firstWorkerRequestMs)} ms`,
      met:
        noSlower(auto.firstMetaRequestMs, never.firstMetaRequestMs) &&
        noSlower(auto.firstWorkerRequestMs, never.firstWorkerRequestMs),
    });
  }
  if (results.setupInstall) {
    const install = results.setupInstall;
    checks.push({
      name: `9. npm ci of ${install.packages} packages in set-up: allowlist vs open`,
      target: '≤ 1.5×',
      measured: `${round1(install.allowlistMedianMs / 1000)} vs ${round1(install.openMedianMs / 1000)} s: ${install.ratio}×`,
      met: install.ratio <= 1.5,
    });
  }
  return checks;
}

const round1 = (value: number): number => Math.round(value * 10) / 10;

function table(header: string[], rows: (string | number)[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

function comparisonRow(comparison: Comparison): (string | number)[] {
  return [
    comparison.name,
    comparison.agentRunner.medianMs,
    comparison.raw.medianMs,
    `${comparison.ratio}×`,
    `${comparison.agentRunner.p90Ms} / ${comparison.raw.p90Ms}`,
    `${comparison.warmup} + ${comparison.agentRunner.count}`,
  ];
}

/** One line saying what both sides' containers were started with (from docker inspect). */
function hardeningLine(hardening: Record<string, unknown>): string {
  const value = (key: string) => JSON.stringify(hardening[key]);
  const mounts = (hardening.mounts as { destination?: string; rw?: boolean }[] | undefined) ?? [];
  const labels = (hardening.labels as string[] | undefined) ?? [];
  return (
    `Checked equal on both sides with \`docker inspect\` before timing: init ${value('init')}, cap-drop ${value('capDrop')}, ` +
    `security-opt ${value('securityOpt')}, read-only root ${value('readonlyRootfs')}, tmpfs ${Object.keys((hardening.tmpfs as object | undefined) ?? {}).join(' and ')}, ` +
    `memory ${value('memory')} B (swap ${value('memorySwap')}), pids ${value('pidsLimit')}, NanoCpus ${value('nanoCpus')}, ` +
    `network ${value('networkMode')}, user ${value('user')}, ${labels.length} labels (${labels.join(', ')}), ` +
    `bind mounts ${mounts.map((mount) => `${mount.destination}${mount.rw ? ' (rw)' : ' (ro)'}`).join(', ')}.`
  );
}

/** Rows of the prompt-growth table: the calls at these history lengths. */
const PROMPT_ROWS = [0, 1, 2, 5, 10, 20, 30, 40, 50];

export function renderMarkdown(results: BenchResults): string {
  const { machine } = results;
  const lines: string[] = [
    `# agent-runner benchmark: ${machine.date}`,
    '',
    `Machine: ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, ${machine.os} (kernel ${machine.kernel}), ` +
      `Docker ${machine.dockerServer} (CLI ${machine.dockerClient}), Node ${machine.node}. Image: \`${results.image}\`. ` +
      `Load average (1/5/15 min) at start ${machine.loadAverageAtStart.join(' / ')}, at end ${machine.loadAverageAtEnd?.join(' / ') ?? 'n/a'}. ` +
      `Whole run: ${results.durationSeconds} s. Leftover bench containers: ${results.leftoverContainers}.`,
    '',
    '## Targets',
    '',
    table(
      ['Measure', 'Target', 'Measured', 'Met'],
      results.targets.map((check) => [check.name, check.target, check.measured, check.met ? 'yes' : 'no']),
    ),
    '',
    '## 1–2. Runtime against the raw Docker CLI (medians, ms)',
    '',
    table(
      ['Operation', 'agent-runner', 'docker CLI', 'ratio', 'p90 (ar / cli)', 'warm-up + counted'],
      [results.sandbox.create, results.sandbox.exec, results.sandbox.remove].map(comparisonRow),
    ),
    '',
    hardeningLine(results.hardening),
    '',
    `Docker CLI start-up alone (\`docker --version\`, no engine call): median ${results.dockerCliStart.medianMs} ms.`,
    '',
    '## 1a–2a. Runtime against the Engine API called directly (node:http over the socket; medians, ms)',
    '',
    table(
      ['Operation', 'agent-runner', 'raw API', 'ratio', 'p90 (ar / api)', 'warm-up + counted'],
      [results.rawApi.create, results.rawApi.exec].map(comparisonRow),
    ),
    '',
    '## 6. Preparation by repository size (ms)',
    '',
    'Floor: `git worktree add` of the same commit + container create and start through the raw API. ' +
      'Preparation: the workspace (snapshot, sandbox repository, scope permissions, the worktree) and the ' +
      'sandbox started, everything before the first worker request but the worker. Steps overlap (they run ' +
      'concurrently), so they do not add up to the total.',
    '',
    table(
      [
        'Files',
        'worktree add',
        'container start',
        'floor',
        'preparation',
        'ratio',
        'worktree add, parallel checkout (ratio)',
        'second task',
        'resume',
        'steps of the first task',
      ],
      results.preparation.map((row) => [
        row.files,
        row.worktreeAddMs,
        row.containerStartMs,
        row.floorMs,
        row.preparationMs,
        `${row.ratio}×`,
        `${row.parallelWorktreeAddMs} (${round(row.preparationMs / (row.parallelWorktreeAddMs + row.containerStartMs))}×)`,
        row.secondTaskMs,
        row.resumeMs,
        Object.entries(row.steps)
          .map(([step, ms]) => `${step} ${Math.round(ms ?? 0)}`)
          .join(', '),
      ]),
    ),
    '',
    '## 7. `agent-runner run` start (a fresh process, scripted models, real sandbox and codex; ms)',
    '',
    table(
      [
        'Repository',
        'Files',
        '→ first Meta-agent request (median)',
        'samples',
        '`node -e 0` (median)',
        '→ first worker request (median)',
        'samples',
        'floor: worktree add + container (median)',
        'ratio',
        'floor with parallel checkout (ratio)',
        'exit after interrupt',
      ],
      results.startLatency.map((start) => [
        start.label,
        start.files,
        start.firstMetaRequestMs,
        start.metaSamplesMs.join(', '),
        start.nodeFloorMs,
        start.firstWorkerRequestMs,
        start.workerSamplesMs.join(', '),
        start.floorMs,
        `${start.workerRatio}×`,
        `${start.parallelFloorMs} (${start.parallelWorkerRatio}×)`,
        start.exitCode ?? 'signal',
      ]),
    ),
    '',
    '## 3. Loop iteration: agent-runner beyond its Docker calls (medians)',
    '',
    table(
      [
        'Iterations',
        'Runs',
        'Overhead / iteration (ms)',
        'Docker / iteration (ms)',
        'Task overhead total (ms)',
        'CPU / iteration (ms)',
        'Task wall (ms)',
        'Same task, no Docker: ms / iteration',
        'Max prompt (tokens)',
      ],
      results.loop.map((loop) => [
        loop.iterations,
        loop.repetitions,
        loop.overheadPerIterationMs,
        loop.dockerPerIterationMs,
        loop.overheadTotalMs,
        loop.cpuPerIterationMs,
        loop.wallMedianMs,
        loop.noDockerPerIterationMs,
        loop.maxPromptTokens,
      ]),
    ),
    '',
    `What one more iteration adds (slope of the task overhead): ${marginalCosts(results.loop)
      .map((pair) => `${pair.from}→${pair.to} iterations: ${pair.perIterationMs} ms`)
      .join('; ')}. The rest of the 1-iteration figure is fixed per task (set-up, plan call, note).`,
    '',
    '## 4. Tasks in parallel',
    '',
    table(
      [
        'Tasks',
        'Iterations each',
        'Wall (ms)',
        'Tasks / min',
        'Iterations / s',
        'Outside Docker (ms)',
        'Peak RSS sampled (MiB)',
        'VmHWM (MiB)',
      ],
      results.parallel.map((result) => [
        result.tasks,
        result.iterationsPerTask,
        result.wallMs,
        result.tasksPerMinute,
        result.iterationsPerSecond,
        result.outsideDockerMs,
        result.memory.sampledPeakMiB,
        result.memory.kernelPeakMiB ?? 'n/a',
      ]),
    ),
    '',
    `## 5. Meta-agent prompt size (estimated tokens, chars / 4; budget ${results.prompt.budgetTokens})`,
    '',
    table(
      ['Runs in history', 'next_action', 'completion_assessment', 'next_action with no budget'],
      PROMPT_ROWS.flatMap((runs) => {
        const next = results.prompt.calls.find(
          (call) => call.purpose === 'next_action' && call.runsInHistory === runs,
        );
        const assess = results.prompt.calls.find(
          (call) => call.purpose === 'completion_assessment' && call.runsInHistory === runs,
        );
        if (!next && !assess) return [];
        return [[runs, next?.tokens ?? '–', assess?.tokens ?? '–', next?.shadowTokens ?? '–']];
      }),
    ),
    '',
  ];
  return lines.join('\n');
}
