/**
 * What the runner remembers about a task's workspace between runs (`.agent-runner/runs/<TASK-ID>/`): the
 * workspace facts and the sandbox→real commit map that makes replay incremental and idempotent.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface WorkspaceState {
  version: 1;
  taskId: string;
  baseSha: string;
  /** Root commit of the current sandbox repository. */
  snapshotSha: string;
  /** The real commit the snapshot was made from (the base on a first run, the branch head later). */
  snapshotOf: string;
  /** Exclude rules the snapshot was made with; a change needs a new sandbox repository. */
  exclude: string[];
  createdAt: string;
}

export interface CommitMap {
  version: 1;
  /** Sandbox commit id → real commit id on the task branch (the snapshot maps to the commit it was made from). */
  map: Record<string, string>;
  /**
   * Real commit id → kept paths (excluded ones, `.agent-runner/`) the worker's commit tried to add, change or
   * delete (the base version won).
   */
  excludedTouched: Record<string, string[]>;
}

async function readJson<T>(file: string): Promise<T | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** Writes through a temporary file and a rename, so a crash never leaves half a file. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`);
  await rename(temporary, file);
}

export function readWorkspaceState(file: string): Promise<WorkspaceState | null> {
  return readJson<WorkspaceState>(file);
}

export async function readCommitMap(file: string): Promise<CommitMap> {
  return (await readJson<CommitMap>(file)) ?? { version: 1, map: {}, excludedTouched: {} };
}
