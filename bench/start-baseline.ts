/**
 * `npm run bench:baseline`: what the baseline (the DoD on the base, before the first worker run) and the
 * preflight cost on the way to the first worker request, when the Meta-agent takes its time to plan. A real
 * `agent-runner run` (the built CLI) on a small node project whose `npm test` takes about 1.5 s, with a scripted
 * model that answers the plan after 6 s (AGENT_RUNNER_BENCH_PLAN_DELAY_MS) and the real codex in the real sandbox; `dod.baseline: off` against
 * `auto`, alternating, three each (medians). Both run the preflight. Writes bench/results/start-baseline-<delay>.json.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startOnce } from './start-latency.js';
import { median, round } from './stats.js';

const PLAN_DELAY_MS = Number(process.env.AGENT_RUNNER_BENCH_PLAN_DELAY_MS ?? 6_000);
const SAMPLES = 3;

async function project(): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'bench-baseline-'));
  await writeFile(
    path.join(root, 'package.json'),
    `${JSON.stringify({ name: 'b', version: '1.0.0', private: true, scripts: { test: 'node --test' } })}\n`,
  );
  await mkdir(path.join(root, 'test'));
  await writeFile(
    path.join(root, 'test', 'slow.test.js'),
    "const test = require('node:test');\ntest('takes its time', () => new Promise((resolve) => setTimeout(resolve, 1500)));\n",
  );
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('-c', 'user.name=b', '-c', 'user.email=b@x', 'commit', '-q', '-m', 'init');
  return root;
}

async function main(): Promise<void> {
  const repo = await project();
  const scratch = await mkdtemp(path.join(tmpdir(), 'bench-baseline-scratch-'));
  const samples: Record<'off' | 'auto', number[]> = { off: [], auto: [] };
  try {
    for (let index = 0; index < SAMPLES; index += 1)
      for (const baseline of ['off', 'auto'] as const) {
        const run = await startOnce(repo, scratch, false, 'never', { planDelayMs: PLAN_DELAY_MS, baseline });
        if (run.exitCode !== 130)
          throw new Error(`the run ended ${run.exitCode}, not 130 after the interrupt`);
        samples[baseline].push(run.workerMs ?? Number.NaN);
        process.stderr.write(
          `[bench] baseline ${baseline}: first worker request at ${round(run.workerMs ?? 0)} ms\n`,
        );
      }
    const result = {
      planDelayMs: PLAN_DELAY_MS,
      offMs: round(median(samples.off)),
      autoMs: round(median(samples.auto)),
      samples,
    };
    await writeFile(
      path.join(import.meta.dirname, 'results', `start-baseline-${PLAN_DELAY_MS}.json`),
      `${JSON.stringify(result, null, 2)}\n`,
    );
    process.stdout.write(
      `run → first worker request, plan answered after ${PLAN_DELAY_MS} ms, npm test ~1.5 s: ` +
        `dod.baseline off ${result.offMs} ms, auto ${result.autoMs} ms (medians of ${SAMPLES})\n`,
    );
  } finally {
    await rm(repo, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
