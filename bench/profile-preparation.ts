/**
 * `node --import tsx bench/profile-preparation.ts 1000 10000 30000`: the preparation breakdown of the size
 * series alone (each step, second task, resume), without the rest of the benchmark.
 */
import { randomBytes } from 'node:crypto';
import { validateConfig } from '../src/config/load.js';
import { resolveWorkerImage } from '../src/app.js';
import { createDockerClient } from '../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../src/sandbox/docker-runtime.js';
import { VERSION } from '../src/version.js';
import { benchSandboxes } from './bench-sandbox.js';
import { measurePreparation } from './preparation.js';
import { rawEngine } from './raw-engine.js';

async function main(): Promise<void> {
  const sizes = process.argv.slice(2).map(Number);
  const image = process.env.AGENT_RUNNER_BENCH_IMAGE ?? (await resolveWorkerImage(validateConfig([])));
  const client = createDockerClient();
  const runtime = new DockerSandboxRuntime(client, { version: VERSION });
  const sandboxes = await benchSandboxes(randomBytes(3).toString('hex'), image);
  const engine = rawEngine();
  try {
    for (const files of sizes.length > 0 ? sizes : [1000, 10000, 30000]) {
      const row = await measurePreparation(files, { runtime, engine, sandboxes }, (message) =>
        process.stderr.write(`${message}\n`),
      );
      process.stdout.write(`${JSON.stringify(row)}\n`);
    }
  } finally {
    engine.close();
    await sandboxes.cleanup(client);
  }
}

await main();
