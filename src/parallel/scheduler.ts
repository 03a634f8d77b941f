/**
 * The scheduler of parallel work, pure: given the plan's subtasks, their states and the files of the base
 * tree, which subtasks start now and why each other one waits. A subtask is ready when every subtask it is
 * blocked by has merged; at most `max` run at once; two subtasks whose write scopes can touch the same path
 * never run (or wait to merge) at the same time, so a merge never meets a conflict the plan could have
 * avoided.
 */
import { patternsOverlap } from '../workspace/scope/glob-overlap.js';
import { compileScope, type ScopeMatcher } from '../workspace/scope/scope.js';

/** Where a subtask is in its life. `reviewing` and `merging`: its gate passed, its branch is not merged yet. */
export const SUBTASK_STATES = [
  'waiting',
  'running',
  'reviewing',
  'merging',
  'merged',
  'failed',
  'skipped',
] as const;
export type SubtaskState = (typeof SUBTASK_STATES)[number];

/** What the scheduler needs to know of a subtask. */
export interface SchedulableSubtask {
  id: string;
  writeScope: readonly string[];
  blockedBy: readonly string[];
}

/** Why a subtask did not start now, in words for the log and the progress line. */
export interface Wait {
  id: string;
  kind: 'blocked' | 'overlap' | 'capacity';
  reason: string;
}

export interface ScheduleDecision {
  /** Subtasks to start now, in plan order. */
  start: string[];
  waits: Wait[];
  /** Subtasks that can never start because a subtask they wait for failed or was skipped. */
  skip: { id: string; reason: string }[];
}

/** Holding a write scope: started and not merged (nor ended). */
const HOLDS_SCOPE: ReadonlySet<SubtaskState> = new Set(['running', 'reviewing', 'merging']);

function writeMatcher(scope: readonly string[]): ScopeMatcher {
  // An empty write scope means "everything" to the scope matcher; the protocol refuses it, and so do we.
  if (scope.length === 0) throw new Error('a subtask needs a non-empty write scope');
  return compileScope({ exclude: [], read: [], write: [...scope] });
}

/**
 * A path both scopes may write, or null: a file of the base tree both match (the fast path), else a path
 * some pattern of each could match (src/workspace/scope/glob-overlap.ts: judged on the patterns, so files that do not
 * exist yet count). A witness the real matchers refuse (a `!pattern` took it away) is still an overlap: the
 * scheduler would rather run two subtasks one after the other than let their merge conflict.
 */
export function scopeOverlap(
  left: readonly string[],
  right: readonly string[],
  baseFiles: readonly string[],
): string | null {
  const a = writeMatcher(left);
  const b = writeMatcher(right);
  for (const file of baseFiles) if (a.isWritable(file) && b.isWritable(file)) return file;
  let unconfirmed: string | null = null;
  for (const leftPattern of left)
    for (const rightPattern of right) {
      const witness = patternsOverlap(leftPattern, rightPattern);
      if (witness === null) continue;
      // A pattern ending in /** covers what is below its directory, not the directory itself.
      const confirmed = [witness, `${witness}/x`].find((path) => a.isWritable(path) && b.isWritable(path));
      if (confirmed) return confirmed;
      unconfirmed ??= witness;
    }
  return unconfirmed;
}

export interface ScheduleInput {
  /** In plan order: when two ready subtasks overlap, the earlier one starts. */
  subtasks: readonly SchedulableSubtask[];
  states: Readonly<Record<string, SubtaskState>>;
  max: number;
  /** Files of the base tree (repository-relative), for the overlap check. */
  baseFiles: readonly string[];
}

/** Which waiting subtasks start now, which wait (and why), and which can never start. */
export function schedule(input: ScheduleInput): ScheduleDecision {
  const { subtasks, states, max, baseFiles } = input;
  const stateOf = (id: string): SubtaskState => states[id] ?? 'waiting';
  const byId = new Map(subtasks.map((subtask) => [subtask.id, subtask]));
  const holding = subtasks.filter((subtask) => HOLDS_SCOPE.has(stateOf(subtask.id)));
  let running = subtasks.filter((subtask) => stateOf(subtask.id) === 'running').length;
  const decision: ScheduleDecision = { start: [], waits: [], skip: [] };
  const overlapCache = new Map<string, string | null>();
  const overlap = (left: SchedulableSubtask, right: SchedulableSubtask) => {
    const key = [left.id, right.id].sort().join('\u0000');
    if (!overlapCache.has(key))
      overlapCache.set(key, scopeOverlap(left.writeScope, right.writeScope, baseFiles));
    return overlapCache.get(key) ?? null;
  };
  for (const subtask of subtasks) {
    if (stateOf(subtask.id) !== 'waiting') continue;
    const dead = subtask.blockedBy.filter((id) => ['failed', 'skipped'].includes(stateOf(id)));
    if (dead.length > 0) {
      decision.skip.push({
        id: subtask.id,
        reason: `it waits for ${dead.join(', ')}, which did not complete`,
      });
      continue;
    }
    const pending = subtask.blockedBy.filter((id) => byId.has(id) && stateOf(id) !== 'merged');
    if (pending.length > 0) {
      decision.waits.push({
        id: subtask.id,
        kind: 'blocked',
        reason: `waits for ${pending.map((id) => `${id} (${stateOf(id)})`).join(', ')} to merge`,
      });
      continue;
    }
    const clash = holding
      .map((other) => ({ other, path: overlap(subtask, other) }))
      .find((entry) => entry.path !== null);
    if (clash) {
      decision.waits.push({
        id: subtask.id,
        kind: 'overlap',
        reason: `waits for ${clash.other.id} (${stateOf(clash.other.id)}): both write scopes can write a path such as ${clash.path}`,
      });
      continue;
    }
    if (running >= max) {
      decision.waits.push({
        id: subtask.id,
        kind: 'capacity',
        reason: `waits for a free slot: ${running} of ${max} subtasks running (parallel.max)`,
      });
      continue;
    }
    decision.start.push(subtask.id);
    holding.push(subtask);
    running += 1;
  }
  return decision;
}

export interface MachineCapacity {
  cores: number;
  freeMemoryBytes: number;
  /** `sandbox.memory`: what one subtask's container may use. */
  sandboxMemoryBytes: number;
}

/** The default of `parallel.max`. */
export const DEFAULT_PARALLEL_CAP = 4;

/**
 * What the machine can hold: one subtask per core (a worker mostly waits for its model, and `sandbox.cpus`
 * is a ceiling, not a reservation), as many as free memory holds sandboxes at their memory limit, at most 4.
 */
export function defaultParallelMax(machine: MachineCapacity): number {
  const byMemory = Math.floor(machine.freeMemoryBytes / Math.max(1, machine.sandboxMemoryBytes));
  return Math.max(1, Math.min(DEFAULT_PARALLEL_CAP, machine.cores, byMemory));
}
