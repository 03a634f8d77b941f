/**
 * Limits as data: which limit a task or a project reached is a coded reason, and every wording of it (the
 * task's NEEDS_REVIEW reason, the gateway's refusal) is derived here from the code. The limits themselves are
 * the config's one `Limits` type.
 */
import type { Limits } from '../config/schema.js';
import { formatSize } from '../config/units.js';
import type { ReplayCap, Usage } from './types.js';
import { totalTokens } from './usage.js';

export type { Limits } from '../config/schema.js';
export type { DiskCapKind, DiskCapKinds } from './records.js';

/** What a project watches and hands its subtasks what is left of. */
export type SpendingLimits = Pick<Limits, 'wallClock' | 'maxMetaCalls' | 'maxTokens' | 'maxCostUsd'>;

/** A limit that was reached. */
export type LimitReason =
  | { code: 'max_iterations'; limit: number }
  | { code: 'max_meta_calls'; limit: number }
  /** The project's count, shared by its subtasks: `used` calls made by the project and all its subtasks. */
  | { code: 'project_meta_calls'; limit: number; used: number }
  /** `project`: the project's limit, reached by a subtask's spending (or its siblings'). */
  | { code: 'max_tokens'; limit: number; used: number; project?: true }
  | { code: 'max_cost'; limit: number; used: number; project?: true }
  /** `earlier`: the limit covers earlier attempts (resume), `taskId` names the task to give more time. */
  | { code: 'wall_clock'; limitMs: number; earlier?: { taskId: string }; project?: true }
  /** The worker's commits went over a bound of the replay: none was brought to the task branch. */
  | { code: 'replay'; cap: ReplayCap }
  | DiskCapReached;

/** Which watched directory of the sandbox: the sandbox repository (work tree + .git) or CODEX_HOME. */
export type DiskCap = 'repository' | 'codexHome';

/**
 * A disk cap the sandbox went over (`sandbox.disk.<cap>`): the run in it was stopped at once. `grewBytes` is
 * what the directory had grown by when it was measured, `limitBytes` the cap, `path` the host directory.
 */
export interface DiskCapReached {
  code: 'disk';
  cap: DiskCap;
  limitBytes: number;
  grewBytes: number;
  path: string;
  /** A hard cap: the directory's own file system filled up (writes past it failed in the sandbox). */
  hard?: true;
}

const DISK_CAP_WORDS: Record<DiskCap, string> = {
  repository: 'the sandbox repository (work tree and .git)',
  codexHome: "the worker's CODEX_HOME",
};

/** The config key of each replay bound, and how its figures are written. */
const REPLAY_CAPS: Record<ReplayCap['cap'], { key: string; what: (n: number) => string }> = {
  max_commits: { key: 'sandbox.replay.maxCommits', what: (n) => `${n} new commits` },
  max_tree_bytes: { key: 'sandbox.replay.maxTreeBytes', what: (n) => `a tree of ${mebibytes(n)}` },
};

function mebibytes(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB (${bytes} bytes)`;
}

/** The replay bound in words: what was found, the bound, where the work is and the fix. */
function replayCapMessage(cap: ReplayCap): string {
  const { key, what } = REPLAY_CAPS[cap.cap];
  return (
    `replay limit: the worker's branch holds ${what(cap.actual)}, over ${key} (${what(cap.limit)}); ` +
    'nothing of it was brought to the task branch or the worktree (it is still in the sandbox repository). ' +
    `If the work is wanted, raise ${key} in agent-runner.yaml and continue the task with \`agent-runner resume\``
  );
}

function whose(reason: { project?: true }): string {
  return reason.project ? "the project's" : 'the';
}

/** The reason in words, as the task's (or the project's) NEEDS_REVIEW reason says it. */
export function limitMessage(reason: LimitReason): string {
  switch (reason.code) {
    case 'max_iterations':
      return `the limit of ${reason.limit} worker runs was reached`;
    case 'max_meta_calls':
      return `the limit of ${reason.limit} Meta-agent calls was reached`;
    case 'project_meta_calls':
      return `the project's limit of ${reason.limit} Meta-agent calls was reached (${reason.used} made by the project and its subtasks)`;
    case 'max_tokens':
      return `${whose(reason)} token budget of ${reason.limit} was reached`;
    case 'max_cost':
      return `${whose(reason)} cost budget of $${reason.limit} was reached`;
    case 'wall_clock': {
      const earlier = reason.earlier
        ? ` (earlier attempts included; \`agent-runner resume ${reason.earlier.taskId} --timeout 30m\` gives it more time)`
        : '';
      return `${whose(reason)} wall-clock limit of ${Math.round(reason.limitMs / 1000)} s was reached${earlier}`;
    }
    case 'replay':
      return replayCapMessage(reason.cap);
    case 'disk':
      return diskCapMessage(reason);
  }
}

/**
 * The reason as the gateway says it when it refuses the worker's further model requests (the task's
 * reason then starts with `budget:`).
 */
export function budgetRefusalMessage(
  reason: Extract<LimitReason, { code: 'max_tokens' | 'max_cost' }>,
): string {
  return reason.code === 'max_tokens'
    ? `budget: ${whose(reason)} token budget of ${reason.limit} is spent (${reason.used} tokens used by the Meta-agent and the worker); the worker's further model requests were refused`
    : `budget: ${whose(reason)} cost budget of $${reason.limit} is spent ($${reason.used.toFixed(4)} used by the Meta-agent and the worker); the worker's further model requests were refused`;
}

/** The token or cost limit `spent` reached, if any (tokens first). */
export function spendingReached(
  limits: Pick<Limits, 'maxTokens' | 'maxCostUsd'>,
  spent: { tokens: number; costUsd: number },
): Extract<LimitReason, { code: 'max_tokens' | 'max_cost' }> | null {
  if (limits.maxTokens !== undefined && spent.tokens >= limits.maxTokens)
    return { code: 'max_tokens', limit: limits.maxTokens, used: spent.tokens };
  if (limits.maxCostUsd !== undefined && spent.costUsd >= limits.maxCostUsd)
    return { code: 'max_cost', limit: limits.maxCostUsd, used: spent.costUsd };
  return null;
}

/** The token or cost limit a usage reached, if any. */
export function usageReached(
  limits: Pick<Limits, 'maxTokens' | 'maxCostUsd'>,
  usage: Usage,
): Extract<LimitReason, { code: 'max_tokens' | 'max_cost' }> | null {
  return spendingReached(limits, { tokens: totalTokens(usage), costUsd: usage.costUsd });
}

/** The disk cap in words, with its figures and the fix. */
export function diskCapMessage(reason: DiskCapReached): string {
  const how = reason.hard
    ? ` and filled its file system, sized for its cap of ${formatSize(reason.limitBytes)} (writes past it failed in the sandbox), so the sandbox's processes were stopped`
    : `, over its cap of ${formatSize(reason.limitBytes)}, so the sandbox's processes were stopped at once`;
  return (
    `disk cap sandbox.disk.${reason.cap} reached: ${DISK_CAP_WORDS[reason.cap]} grew by ${formatSize(reason.grewBytes)}` +
    `${how} ` +
    `(uncommitted files stay in ${reason.hard ? `${reason.path}.img, the file system mounted at ${reason.path} while the task runs` : reason.path}, not copied to your repository). ` +
    `Find what wrote so much there, or raise sandbox.disk.${reason.cap} in agent-runner.yaml`
  );
}
