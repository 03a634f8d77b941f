import { describe, expect, it } from 'vitest';
import {
  budgetRefusalMessage,
  limitMessage,
  spendingReached,
  type LimitReason,
} from '../../src/core/limits.js';

describe('limits as coded reasons', () => {
  it.each<[LimitReason, string]>([
    [{ code: 'max_iterations', limit: 8 }, 'the limit of 8 worker runs was reached'],
    [{ code: 'max_meta_calls', limit: 40 }, 'the limit of 40 Meta-agent calls was reached'],
    [
      { code: 'project_meta_calls', limit: 21, used: 22 },
      "the project's limit of 21 Meta-agent calls was reached (22 made by the project and its subtasks)",
    ],
    [{ code: 'max_tokens', limit: 300, used: 310 }, 'the token budget of 300 was reached'],
    [{ code: 'max_cost', limit: 0.5, used: 0.51 }, 'the cost budget of $0.5 was reached'],
    [{ code: 'wall_clock', limitMs: 5_400 }, 'the wall-clock limit of 5 s was reached'],
    [
      { code: 'wall_clock', limitMs: 60_000, earlier: { taskId: 'T-1' } },
      'the wall-clock limit of 60 s was reached (earlier attempts included; `agent-runner resume T-1 --timeout 30m` gives it more time)',
    ],
  ])('%j reads: %s', (reason, message) => {
    expect(limitMessage(reason)).toBe(message);
  });

  it('the gateway says a spent token or cost budget with what was used', () => {
    expect(budgetRefusalMessage({ code: 'max_tokens', limit: 300, used: 312 })).toBe(
      "budget: the token budget of 300 is spent (312 tokens used by the Meta-agent and the worker); the worker's further model requests were refused",
    );
    expect(budgetRefusalMessage({ code: 'max_cost', limit: 0.01, used: 0.0123 })).toBe(
      "budget: the cost budget of $0.01 is spent ($0.0123 used by the Meta-agent and the worker); the worker's further model requests were refused",
    );
  });

  it('spending reaches a limit at the limit, tokens first, and none without limits', () => {
    expect(spendingReached({}, { tokens: 1e9, costUsd: 1e9 })).toBeNull();
    expect(spendingReached({ maxTokens: 100 }, { tokens: 99, costUsd: 5 })).toBeNull();
    expect(spendingReached({ maxTokens: 100 }, { tokens: 100, costUsd: 0 })).toEqual({
      code: 'max_tokens',
      limit: 100,
      used: 100,
    });
    expect(spendingReached({ maxTokens: 100, maxCostUsd: 1 }, { tokens: 100, costUsd: 2 })?.code).toBe(
      'max_tokens',
    );
    expect(spendingReached({ maxTokens: 100, maxCostUsd: 1 }, { tokens: 10, costUsd: 1 })?.code).toBe(
      'max_cost',
    );
  });
});
