/**
 * `npm run bench`: agent-runner's own overhead against raw Docker (see docs/benchmarks.md). Not part of
 * `npm test`. Writes bench/results/latest.json and latest.md and prints the Markdown.
 *
 * Environment: AGENT_RUNNER_BENCH_IMAGE (default: the worker image, which scripts/setup.sh builds), AGENT_RUNNER_BENCH_DOCKER_CLI
 * (default /usr/local/bin/docker), AGENT_RUNNER_BENCH_SIZES (default 1000,10000,30000,100000: the repository
 * sizes of section 6; generated repositories are cached under the temporary directory).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { format, resolveConfig } from 'prettier';
import { validateConfig } from '../src/config/load.js';
import { createDockerClient } from '../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../src/sandbox/docker-runtime.js';
import { VERSION } from '../src/version.js';
import { benchSandboxes } from './bench-sandbox.js';
import { docker } from './docker-cli.js';
import { measureLoopOverhead, measureParallel, measurePromptGrowth } from './loop-benchmarks.js';
import { measureParallelSubtasks, renderParallelSubtasks } from './parallel-subtasks.js';
import { loadAverage, machineInfo } from './machine.js';
import { checkTargets, renderMarkdown, type BenchResults } from './report.js';
import {
  assertSameHardening,
  cliStartFloor,
  compareCreate,
  compareCreateRawApi,
  compareExec,
  compareExecRawApi,
} from './sandbox-comparison.js';
import { measurePreparation, type PreparationRow } from './preparation.js';
import { rawEngine } from './raw-engine.js';
import { measureSetupInstall } from './setup-install.js';
import { round } from './stats.js';
import { measureStartSection } from './start-section.js';
import { resolveWorkerImage } from '../src/app.js';
import { runMain } from './run-main.js';

const RESULTS_DIR = path.join(import.meta.dirname, 'results');

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

async function main(): Promise<void> {
  const startedAt = performance.now();
  const runId = randomBytes(3).toString('hex');
  const config = validateConfig([]);
  // The worker image exists wherever the README's set-up ran (agent-runner-base:bookworm only where no
  // registry could be reached).
  const image = process.env.AGENT_RUNNER_BENCH_IMAGE ?? (await resolveWorkerImage(config));
  await docker(['image', 'inspect', '--format', '{{.Id}}', image]).catch((error: unknown) => {
    throw new Error(
      `The bench image ${image} is not on this engine (${(error as Error).message}). ` +
        'Build it (scripts/setup.sh) or set AGENT_RUNNER_BENCH_IMAGE.',
    );
  });
  const client = createDockerClient();
  const runtime = new DockerSandboxRuntime(client, { version: VERSION });
  const sandboxes = await benchSandboxes(runId, image);
  const scratch = await mkdtemp(path.join(tmpdir(), 'agent-runner-bench-state-'));
  const engine = rawEngine();
  const sizes = (process.env.AGENT_RUNNER_BENCH_SIZES ?? '1000,10000,30000,100000')
    .split(',')
    .map(Number)
    .filter((size) => Number.isInteger(size) && size > 0);
  let leftoverContainers = -1;
  try {
    const machine = await machineInfo();
    progress(`run ${runId} on ${machine.cores} cores, Docker ${machine.dockerServer}, ${image}`);
    const dockerCliStart = await cliStartFloor(10);

    const hardening = await assertSameHardening(runtime, sandboxes);
    progress(
      '1. sandbox create + start: runtime vs docker run -d (same hardening, checked with docker inspect)',
    );
    const { create, remove } = await compareCreate(runtime, sandboxes, { warmup: 2, counted: 15 });
    progress(`   ${create.agentRunner.medianMs} ms vs ${create.raw.medianMs} ms (${create.ratio}x)`);

    progress('2. exec `true`: runtime vs docker exec');
    const exec = await compareExec(runtime, sandboxes, { warmup: 5, counted: 40 });
    progress(`   ${exec.agentRunner.medianMs} ms vs ${exec.raw.medianMs} ms (${exec.ratio}x)`);

    progress('1a–2a. create + start and exec against the Engine API called directly');
    const rawApi = {
      create: await compareCreateRawApi(runtime, engine, sandboxes, { warmup: 2, counted: 15 }),
      exec: await compareExecRawApi(runtime, engine, sandboxes, { warmup: 5, counted: 40 }),
    };
    progress(
      `   create ${rawApi.create.agentRunner.medianMs} vs ${rawApi.create.raw.medianMs} ms (${rawApi.create.ratio}x), ` +
        `exec ${rawApi.exec.agentRunner.medianMs} vs ${rawApi.exec.raw.medianMs} ms (${rawApi.exec.ratio}x)`,
    );

    const loopContext = { runtime, sandboxes, config, scratch };
    progress('3. loop iterations (1, 10, 50) with a scripted model and a no-op worker');
    const loop = await measureLoopOverhead(loopContext);
    for (const item of loop) {
      progress(`   ${item.iterations}: ${item.overheadPerIterationMs} ms/iteration beyond Docker`);
    }

    progress('4. tasks in parallel (1, 2, 4, 8)');
    const parallel = await measureParallel({ image: image, runId }, [1, 2, 4, 8], 5);
    for (const item of parallel) {
      progress(`   N=${item.tasks}: ${item.wallMs} ms, peak RSS ${item.memory.sampledPeakMiB} MiB`);
    }

    progress('5. Meta-agent prompt size up to 50 runs');
    const prompt = await measurePromptGrowth({ sandboxes, config, scratch }, 50);
    progress(`   max ${prompt.maxTokens} tokens (budget ${prompt.budgetTokens})`);

    progress(`6. preparation by repository size (${sizes.join(', ')} files)`);
    const preparation: PreparationRow[] = [];
    for (const files of sizes) {
      const row = await measurePreparation(files, { runtime, engine, sandboxes }, progress);
      preparation.push(row);
      progress(
        `   ${files}: ${row.preparationMs} ms vs floor ${row.floorMs} ms (${row.ratio}x); ` +
          `second task ${row.secondTaskMs} ms, resume ${row.resumeMs} ms`,
      );
    }

    progress('7. agent-runner run → first Meta-agent request and first worker request');
    const startLatency = await measureStartSection(engine, sandboxes, scratch, progress);

    progress(
      '8. a PRD split into N subtasks: parallel.max N vs 1 (N = 3, 4 at 8 s per model call; 4 at zero)',
    );
    const parallelSubtasks = await measureParallelSubtasks(progress);

    const attempts = Number(process.env.AGENT_RUNNER_BENCH_INSTALL_ATTEMPTS ?? 3);
    progress(`9. npm ci of a lockfile project in sandbox.setup: allowlist vs open (${attempts} each)`);
    const setupInstall = await measureSetupInstall(runtime, {
      image,
      runId,
      attempts,
      onProgress: progress,
    });
    progress(
      `   ${setupInstall.packages} packages: ${setupInstall.allowlistMedianMs} vs ${setupInstall.openMedianMs} ms (${setupInstall.ratio}x)`,
    );

    leftoverContainers =
      (await sandboxes.cleanup(client)) + parallel.reduce((sum, item) => sum + item.leftoverContainers, 0);
    const partial: Omit<BenchResults, 'targets'> = {
      machine: { ...machine, loadAverageAtEnd: loadAverage() },
      image: image,
      durationSeconds: round((performance.now() - startedAt) / 1000, 1),
      dockerCliStart,
      hardening,
      sandbox: { create, remove, exec },
      rawApi,
      preparation,
      startLatency,
      loop,
      parallel,
      prompt,
      setupInstall,
      leftoverContainers,
    };
    const results: BenchResults = { ...partial, targets: checkTargets(partial) };
    const markdown = `${renderMarkdown(results)}\n${renderParallelSubtasks(parallelSubtasks)}`;
    await mkdir(RESULTS_DIR, { recursive: true });
    // Formatted as the repository's formatter would, so `npm run lint` stays clean after a bench run.
    const jsonFile = path.join(RESULTS_DIR, 'latest.json');
    const markdownFile = path.join(RESULTS_DIR, 'latest.md');
    const formatting = (await resolveConfig(jsonFile)) ?? {};
    await writeFile(jsonFile, await format(JSON.stringify(results), { ...formatting, parser: 'json' }));
    await writeFile(markdownFile, markdown);
    await writeFile(
      path.join(RESULTS_DIR, 'parallel-subtasks.json'),
      await format(JSON.stringify(parallelSubtasks), { ...formatting, parser: 'json' }),
    );
    process.stdout.write(`${markdown}\n`);
  } finally {
    if (leftoverContainers < 0) await sandboxes.cleanup(client).catch(() => undefined);
    engine.close();
    await rm(scratch, { recursive: true, force: true });
  }
}

runMain(main);
