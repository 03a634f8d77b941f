/**
 * A project's spending: its own Meta-agent calls (plan, reviews, re-plans) and every subtask's, counted in one
 * ledger that says whether a limit was reached and what is left for the next subtask. Pure, given a clock.
 */
import type { SpendingLimits } from '../core/limits.js';
import { limitMessage, usageReached } from '../core/limits.js';
import type { Clock } from '../core/ports.js';
import type { TaskSummary, Usage } from '../core/types.js';
import { addUsage, totalTokens, ZERO_USAGE } from '../core/usage.js';
import { MetaCallCounter } from './meta-call-counter.js';

export class ProjectLedger {
  /** Handed to every subtask: each counts its calls in it as it makes them. */
  readonly metaCalls: MetaCallCounter;
  private metaUsage: Usage;
  private workerUsage: Usage = ZERO_USAGE;
  private startedAt = 0;

  constructor(
    private readonly limits: SpendingLimits,
    private readonly clock: Clock,
    /** Meta-agent calls and usage already spent (the planning call, earlier attempts). */
    spent: { metaCalls: number; usage: Usage },
  ) {
    this.metaCalls = new MetaCallCounter(limits.maxMetaCalls, spent.metaCalls);
    this.metaUsage = spent.usage;
  }

  /** The project's wall clock starts now. */
  start(): void {
    this.startedAt = this.clock.now();
  }

  /** One of the project's own Meta-agent calls. */
  countMeta(usage: Usage): void {
    this.metaCalls.add();
    this.metaUsage = addUsage(this.metaUsage, usage);
  }

  /** A finished subtask's spending; its Meta-agent calls were counted as it made them (`metaCalls`). */
  countSubtask(summary: TaskSummary): void {
    this.metaUsage = addUsage(this.metaUsage, summary.usage.meta);
    this.workerUsage = addUsage(this.workerUsage, summary.usage.worker);
  }

  usage(): { meta: Usage; worker: Usage; total: Usage } {
    return {
      meta: this.metaUsage,
      worker: this.workerUsage,
      total: addUsage(this.metaUsage, this.workerUsage),
    };
  }

  /** Null while every limit holds; else which was reached, in words. */
  exceeded(): string | null {
    const { limits } = this;
    if (this.clock.now() - this.startedAt >= limits.wallClock)
      return limitMessage({ code: 'wall_clock', limitMs: limits.wallClock });
    if (this.metaCalls.exhausted() !== null)
      return limitMessage({ code: 'max_meta_calls', limit: limits.maxMetaCalls });
    const spent = usageReached(limits, this.usage().total);
    return spent ? limitMessage(spent) : null;
  }

  /**
   * What is left of the project's limits, handed to a subtask when it starts. Subtasks running at once each
   * get the whole rest, so together they can overshoot by what they spend concurrently; no new subtask starts
   * once the project's budget is spent.
   */
  remaining(): SpendingLimits {
    const { limits } = this;
    const total = this.usage().total;
    return {
      wallClock: Math.max(1000, limits.wallClock - (this.clock.now() - this.startedAt)),
      maxMetaCalls: Math.max(1, limits.maxMetaCalls - this.metaCalls.used),
      ...(limits.maxTokens !== undefined
        ? { maxTokens: Math.max(1, limits.maxTokens - totalTokens(total)) }
        : {}),
      ...(limits.maxCostUsd !== undefined
        ? { maxCostUsd: Math.max(0.000001, limits.maxCostUsd - total.costUsd) }
        : {}),
    };
  }
}
