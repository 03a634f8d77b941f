/**
 * The task's token and cost budget as the gateway sees it during a worker run: what the Meta-agent spent (as
 * the runner counts it) plus every worker response the gateway has metered so far. Once it is spent, the
 * gateway refuses the worker's further model requests.
 */
import type { TokenUsage } from '../core/ports.js';
import { budgetRefusalMessage, spendingReached, type Limits } from '../core/limits.js';
import { totalTokens } from '../core/usage.js';

/** The part of the task's limits the gateway enforces. */
export type BudgetLimits = Pick<Limits, 'maxTokens' | 'maxCostUsd'>;

export class TaskBudget {
  private tokens: number;
  private costUsd: number;

  constructor(
    private readonly limits: BudgetLimits,
    /** The cost of a worker usage (the worker model's price; 0 when it has none). */
    private readonly workerCost: (usage: TokenUsage) => number,
    options: {
      /** Spent before this budget existed (earlier attempts of a resumed task); not passed on to `parent`. */
      spent?: { tokens: number; costUsd: number };
      /**
       * The budget of the whole run this task is part of (a project's subtask): every spending is added to it
       * as well, and this budget is spent once either is. Subtasks running at once share it as it is spent.
       */
      parent?: Pick<TaskBudget, 'add' | 'exhausted'>;
    } = {},
  ) {
    this.tokens = options.spent?.tokens ?? 0;
    this.costUsd = options.spent?.costUsd ?? 0;
    this.parent = options.parent;
  }

  private readonly parent: Pick<TaskBudget, 'add' | 'exhausted'> | undefined;

  /** Spending counted elsewhere: the Meta-agent's calls, or earlier attempts of a resumed task. */
  add(spent: { tokens: number; costUsd: number }): void {
    this.tokens += spent.tokens;
    this.costUsd += spent.costUsd;
    this.parent?.add(spent);
  }

  /** A worker response's usage, as metered by the gateway. */
  addWorker(usage: TokenUsage): void {
    this.add({ tokens: totalTokens(usage), costUsd: this.workerCost(usage) });
  }

  /** Null while there is budget left; else why it is spent (the task's reason, starting with "budget"). */
  exhausted(): string | null {
    const reached = spendingReached(this.limits, { tokens: this.tokens, costUsd: this.costUsd });
    if (reached) return budgetRefusalMessage(reached);
    return this.parent?.exhausted() ?? null;
  }
}
