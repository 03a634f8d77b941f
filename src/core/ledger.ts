/**
 * One budget: a task's (or a project's) spending in one ledger that answers "what is left" and "exhausted, and
 * why" with a coded {@link LimitReason}. A subtask's ledger has its project's as parent: everything the subtask
 * spends is spent from the project's too, as it happens, so subtasks running at once share what is left.
 *
 * The runner counts the Meta-agent's calls and each worker run's usage; the gateway meters the worker's
 * responses while a run is under way (so a run cannot overspend before it ends), and a run's recorded usage
 * replaces what was metered during it. Pure, given a clock.
 */
import type { LimitReason, SpendingLimits } from './limits.js';
import { spendingReached } from './limits.js';
import type { Clock } from './ports.js';
import type { Usage } from './types.js';
import { addUsage, subtractUsage, totalTokens, ZERO_USAGE } from './usage.js';

/** What was spent before this ledger existed (earlier attempts of a resumed task or project). */
export interface EarlierSpending {
  metaCalls?: number;
  meta?: Usage;
  worker?: Usage;
  /** Wall clock the earlier attempts used: the limit covers them all. */
  elapsedMs?: number;
}

export interface LedgerOptions {
  /** Spent before; counted against this ledger's limits, never passed on to `parent`. */
  earlier?: EarlierSpending;
  /** The project's ledger, when this one is a subtask's. */
  parent?: Ledger;
  /** Named in the wall-clock reason of a resumed task (how to give it more time). */
  taskId?: string;
}

type SpendingReason = Extract<LimitReason, { code: 'max_tokens' | 'max_cost' }>;

export class Ledger {
  private metaCallCount: number;
  private meta: Usage;
  private worker: Usage;
  /** Metered by the gateway during the worker run under way; replaced by the run's usage when it ends. */
  private metered: Usage = ZERO_USAGE;
  private startedAt: number;
  private readonly elapsedBefore: number;

  constructor(
    private readonly limits: SpendingLimits,
    private readonly clock: Pick<Clock, 'now'>,
    private readonly options: LedgerOptions = {},
  ) {
    const earlier = options.earlier ?? {};
    this.metaCallCount = earlier.metaCalls ?? 0;
    this.meta = earlier.meta ?? ZERO_USAGE;
    this.worker = earlier.worker ?? ZERO_USAGE;
    this.elapsedBefore = earlier.elapsedMs ?? 0;
    this.startedAt = clock.now();
  }

  /** The wall clock starts now (earlier attempts' time still counts). */
  start(): void {
    this.startedAt = this.clock.now();
  }

  /** When the wall clock runs out. */
  deadline(): number {
    return this.startedAt + this.limits.wallClock - this.elapsedBefore;
  }

  /** Wall clock left. */
  remainingMs(): number {
    return Math.max(0, this.deadline() - this.clock.now());
  }

  get metaCalls(): number {
    return this.metaCallCount;
  }

  /**
   * Meta-agent calls and their usage. `shared: false` (a plan made outside the task and handed to it) counts
   * here only: whoever made it counted it where it was made.
   */
  countMeta(usage: Usage, options: { calls?: number; shared?: boolean } = {}): void {
    const calls = options.calls ?? 1;
    this.metaCallCount += calls;
    this.meta = addUsage(this.meta, usage);
    if (options.shared !== false) this.options.parent?.countMeta(usage, { calls });
  }

  /** A worker response's usage, priced, as the gateway meters it during a run. */
  meterWorker(usage: Usage): void {
    this.metered = addUsage(this.metered, usage);
    this.options.parent?.meterWorker(usage);
  }

  /** A finished worker run's usage: it replaces what was metered while the run went on. */
  recordWorkerRun(usage: Usage): void {
    const metered = this.metered;
    this.metered = ZERO_USAGE;
    this.worker = addUsage(this.worker, usage);
    this.options.parent?.settleWorker(metered, usage);
  }

  /** A child's run ended: what it metered becomes what it recorded. */
  private settleWorker(metered: Usage, recorded: Usage): void {
    this.metered = subtractUsage(this.metered, metered);
    this.worker = addUsage(this.worker, recorded);
    this.options.parent?.settleWorker(metered, recorded);
  }

  usage(): { meta: Usage; worker: Usage; total: Usage } {
    const worker = addUsage(this.worker, this.metered);
    return { meta: this.meta, worker, total: addUsage(this.meta, worker) };
  }

  /** Null while every limit holds, here and in the parent; else the first one reached. */
  exhausted(): LimitReason | null {
    const { limits } = this;
    if (this.clock.now() >= this.deadline())
      return {
        code: 'wall_clock',
        limitMs: limits.wallClock,
        ...(this.elapsedBefore > 0 && this.options.taskId
          ? { earlier: { taskId: this.options.taskId } }
          : {}),
      };
    if (this.metaCallCount >= limits.maxMetaCalls)
      return { code: 'max_meta_calls', limit: limits.maxMetaCalls };
    const own = this.ownSpendingReached();
    if (own) return own;
    const project = this.options.parent;
    const parent = project?.exhausted() ?? null;
    if (!project || !parent) return null;
    switch (parent.code) {
      case 'max_meta_calls':
        return { code: 'project_meta_calls', limit: parent.limit, used: project.metaCalls };
      case 'max_tokens':
      case 'max_cost':
      case 'wall_clock':
        return { ...parent, project: true };
      default:
        return parent;
    }
  }

  /** The token or cost limit reached here or in the parent: what the gateway refuses worker requests for. */
  spendingExhausted(): (SpendingReason & { project?: true }) | null {
    const own = this.ownSpendingReached();
    if (own) return own;
    const parent = this.options.parent?.spendingExhausted() ?? null;
    return parent ? { ...parent, project: true } : null;
  }

  /**
   * What is left of the limits, handed to a subtask when it starts. Subtasks running at once each get the
   * whole rest; their own ledgers spend from this one, so none goes on once it is spent.
   */
  remaining(): SpendingLimits {
    const { limits } = this;
    const total = this.usage().total;
    return {
      wallClock: Math.max(1000, this.remainingMs()),
      maxMetaCalls: Math.max(1, limits.maxMetaCalls - this.metaCallCount),
      ...(limits.maxTokens !== undefined
        ? { maxTokens: Math.max(1, limits.maxTokens - totalTokens(total)) }
        : {}),
      ...(limits.maxCostUsd !== undefined
        ? { maxCostUsd: Math.max(0.000001, limits.maxCostUsd - total.costUsd) }
        : {}),
    };
  }

  private ownSpendingReached(): SpendingReason | null {
    const total = this.usage().total;
    return spendingReached(this.limits, { tokens: totalTokens(total), costUsd: total.costUsd });
  }
}
