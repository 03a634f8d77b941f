/**
 * Task scope: which paths are absent from the sandbox (exclude), present but read-only (read), and writable
 * (write). The rules come from `scope` in agent-runner.yaml and may be narrowed per task.
 */
import { DEFAULT_EXCLUDE, DEFAULT_READ } from '../../config/schema.js';
import { compileGlob, compileGlobs } from './glob.js';
import { STATE_DIR_NAME } from '../layout.js';
import { memoryDirPath } from '../../memory/memory-entry.js';

/** The scope rules as written in config (`.gitignore` patterns, see glob.ts for their meaning). */
export interface Scope {
  exclude: string[];
  read: string[];
  /** Empty: the whole tree minus `exclude` and `read`. */
  write: string[];
}

/**
 * agent-runner's own directory, as a scope pattern: `.agent-runner` at the root (file, link or directory) and
 * everything below it. The host keeps its notes and journals there and reads memory from it, so no config can
 * make it the worker's: a change there is a violation, and the replay keeps the base's version of it.
 */
export const RUNNER_OWNED_PATTERN = `/${STATE_DIR_NAME}`;

/** How one path is treated. */
export type PathAccess = 'runner_owned' | 'excluded' | 'read' | 'write' | 'outside_write';

/** The default scope: agent-runner.yaml read-only, everything else writable, the usual secrets excluded. */
export function defaultScope(): Scope {
  return { exclude: [...DEFAULT_EXCLUDE], read: [...DEFAULT_READ], write: [] };
}

/**
 * The memory bank's folder (`memory.dir`) as a read-only path of the task's scope: the worker reads the
 * entries but cannot change them, and a change there is a scope violation. Inside `.agent-runner` the folder is
 * runner_owned already (no config lifts that); elsewhere the config's own `scope.read` may lift it with
 * `!/<dir>/`, for a project whose tasks are meant to edit the entries.
 */
export function memoryBankScope(dir: string): Partial<Scope> {
  const relative = memoryDirPath(dir);
  if (relative === STATE_DIR_NAME || relative.startsWith(`${STATE_DIR_NAME}/`)) return {};
  return { read: [`/${relative}/`] };
}

/**
 * Combines the config's scope with a task's own: excludes and read-only paths add up, in order (so a later
 * `!pattern` re-includes what an earlier one matched, as in a `.gitignore`); a task's `write`, when given,
 * replaces the config's.
 */
export function mergeScope(base: Scope, task: Partial<Scope> = {}): Scope {
  // Duplicates go, keeping the last occurrence: with `.gitignore` meaning the last matching pattern decides,
  // so dropping an earlier copy never changes the result (dropping a later one could).
  const union = (left: string[], right: string[] = []) =>
    [...left, ...right].filter((pattern, index, all) => all.lastIndexOf(pattern) === index);
  return {
    exclude: union(base.exclude, task.exclude),
    read: union(base.read, task.read),
    write: task.write && task.write.length > 0 ? [...task.write] : [...base.write],
  };
}

/** A compiled scope: classifies repository-relative paths. */
export interface ScopeMatcher {
  readonly scope: Scope;
  access(relativePath: string): PathAccess;
  isExcluded(relativePath: string): boolean;
  isWritable(relativePath: string): boolean;
  /** The replay puts the base's version of this path back: an excluded path, or one of the runner's own. */
  keepsBase(relativePath: string): boolean;
}

/**
 * Compiles each pattern list once (never per path); `access` answers runner_owned > excluded > read > write >
 * outside_write, in that order (runner_owned comes from no config, so no `!pattern` lifts it).
 */
export function compileScope(scope: Scope): ScopeMatcher {
  const runnerOwned = compileGlob(RUNNER_OWNED_PATTERN);
  const exclude = compileGlobs(scope.exclude);
  const read = compileGlobs(scope.read);
  const write = compileGlobs(scope.write);
  const everythingWritable = scope.write.length === 0;
  const access = (relativePath: string): PathAccess => {
    if (runnerOwned.matches(relativePath)) return 'runner_owned';
    if (exclude.matches(relativePath)) return 'excluded';
    if (read.matches(relativePath)) return 'read';
    if (everythingWritable || write.matches(relativePath)) return 'write';
    return 'outside_write';
  };
  return {
    scope,
    access,
    isExcluded: (relativePath) => exclude.matches(relativePath),
    isWritable: (relativePath) => access(relativePath) === 'write',
    keepsBase: (relativePath) => runnerOwned.matches(relativePath) || exclude.matches(relativePath),
  };
}
