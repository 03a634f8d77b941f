/** Where a command finds the memory bank: the repository's root and its `memory.dir`. */
import { loadConfig } from '../config/load.js';
import { inspectRepository } from '../workspace/git/inspect-repository.js';
import type { CommandContext } from './program.js';

export interface MemoryPlace {
  root: string;
  dir: string;
}

/** The repository around the working directory and its configured memory folder. */
export async function memoryPlace(context: CommandContext): Promise<MemoryPlace> {
  const repository = await inspectRepository(context.cwd);
  const config = await loadConfig({ repoRoot: repository.root, env: context.env });
  return { root: repository.root, dir: config.memory.dir };
}
