/**
 * The task's budget as the gateway sees it during a worker run: the task's ledger (the Meta-agent's spending,
 * earlier runs, and, for a subtask, its project's) plus every worker response the gateway meters. Once it is
 * spent, the gateway refuses the worker's further model requests.
 */
import type { Ledger } from '../core/ledger.js';
import { budgetRefusalMessage } from '../core/limits.js';
import type { TokenUsage } from '../core/ports.js';

export interface GatewayBudget {
  /** A worker response's usage, as the gateway meters it, and the model it is priced at. */
  meterWorker(usage: TokenUsage, model?: string): void;
  /** Null while there is budget left; else why it is spent (the task's reason, starting with "budget:"). */
  refusal(): string | null;
}

/** The gateway's view of a ledger; `workerCost` prices a worker response (0 for a model with no price). */
export function ledgerBudget(
  ledger: Ledger,
  workerCost: (usage: TokenUsage, model?: string) => number,
): GatewayBudget {
  return {
    meterWorker: (usage, model) => ledger.meterWorker({ ...usage, costUsd: workerCost(usage, model) }),
    refusal: () => {
      const reached = ledger.spendingExhausted();
      return reached ? budgetRefusalMessage(reached) : null;
    },
  };
}
