/**
 * `node --import tsx --cpu-prof bench/profile-loop.ts [iterations] [tasks]`: tasks over the no-Docker runtime,
 * for profiling agent-runner's own per-iteration work (prompt assembly, parsing, logs, the note).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { validateConfig } from '../src/config/load.js';
import { benchSandboxes } from './bench-sandbox.js';
import { runLoopTask } from './loop-task.js';
import { InstantRuntime } from './timed-runtime.js';

const iterations = Number(process.argv[2] ?? 50);
const tasks = Number(process.argv[3] ?? 1);
const config = validateConfig([]);
const sandboxes = await benchSandboxes('profile', 'none');
const scratch = await mkdtemp(path.join(tmpdir(), 'agent-runner-bench-profile-'));
try {
  for (const label of ['warm-up', ...Array.from({ length: tasks }, (_, index) => `task ${index + 1}`)]) {
    const result = await runLoopTask({
      iterations,
      runtime: new InstantRuntime(),
      spec: sandboxes.spec('profile'),
      config,
      scratch,
    });
    process.stdout.write(
      `${label}: ${iterations} iterations in ${result.wallMs.toFixed(1)} ms (${(result.wallMs / iterations).toFixed(2)} ms/iteration)\n`,
    );
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
  await rm(sandboxes.workspace, { recursive: true, force: true });
}
