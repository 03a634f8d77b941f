/**
 * `npm run bench:start`: section 7 alone (run → first Meta-agent request and first worker request, split
 * never and auto side by side), for comparing two commits quickly; prints the rows as JSON on stdout.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolveWorkerImage } from '../src/app.js';
import { validateConfig } from '../src/config/load.js';
import { createDockerClient } from '../src/sandbox/docker-client.js';
import { benchSandboxes } from './bench-sandbox.js';
import { rawEngine } from './raw-engine.js';
import { measureStartSection } from './start-section.js';
import { runMain } from './run-main.js';

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

async function main(): Promise<void> {
  const image = process.env.AGENT_RUNNER_BENCH_IMAGE ?? (await resolveWorkerImage(validateConfig([])));
  const sandboxes = await benchSandboxes(randomBytes(3).toString('hex'), image);
  const scratch = await mkdtemp(path.join(tmpdir(), 'agent-runner-bench-state-'));
  const engine = rawEngine();
  try {
    const rows = await measureStartSection(engine, sandboxes, scratch, progress);
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  } finally {
    await sandboxes.cleanup(createDockerClient()).catch(() => undefined);
    engine.close();
    await rm(scratch, { recursive: true, force: true });
  }
}

runMain(main);
