/** How many subtasks run at once: `parallel.max`, or what the machine holds. */
import os from 'node:os';
import type { Config } from '../config/schema.js';
import { defaultParallelMax } from './scheduler.js';

export function parallelMax(config: Config): number {
  return (
    config.parallel.max ??
    defaultParallelMax({
      cores: os.availableParallelism(),
      freeMemoryBytes: os.freemem(),
      sandboxMemoryBytes: config.sandbox.memory,
    })
  );
}
