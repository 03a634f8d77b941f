import { describe, expect, it } from 'vitest';
import {
  META_ROUTES,
  RateLimiter,
  WORKER_ROUTES,
  matchRoute,
  modelRefusal,
} from '../../src/gateway/request-policy.js';
import { TaskBudget } from '../../src/gateway/task-budget.js';

const codex = WORKER_ROUTES.codex ?? [];

describe('matchRoute', () => {
  it('allows exactly POST /v1/responses for codex', () => {
    expect(matchRoute('POST', '/v1/responses', '/v1', codex)).toEqual({
      allowed: { method: 'POST', path: '/responses' },
    });
  });

  it.each([
    ['GET', '/v1/responses', 'route'],
    ['POST', '/v1/chat/completions', 'route'],
    ['POST', '/v1/files', 'route'],
    ['GET', '/v1/models', 'route'],
    ['POST', '/v1/responses/compact', 'route'],
    ['POST', '/v1/responses?stream=true', 'route'],
    ['POST', '/meta/v1/chat/completions', 'route'],
    ['POST', '/v1', 'route'],
    ['GET', '/v1/../anything', 'path'],
    ['POST', '/v1/../v1/responses', 'path'],
    ['POST', '/v1/./responses', 'path'],
    ['POST', '/v1//responses', 'path'],
    ['POST', '/v1/%2e%2e/files', 'path'],
    ['POST', '/v1/%2E%2E/files', 'path'],
    ['POST', '/v1%2fresponses', 'path'],
    ['POST', '/v1/%252e%252e/files', 'path'],
    ['POST', '/v1/respons%65s', 'path'],
    ['POST', '/v1\\..\\files', 'path'],
    ['POST', '/v1/responses\u0000', 'path'],
    ['POST', 'v1/responses', 'path'],
  ])('refuses %s %s (%s)', (method, target, reason) => {
    const decision = matchRoute(method, target, '/v1', codex);
    expect(decision).toMatchObject({ refused: reason });
  });

  it('allows only the Meta-agent route on the meta prefix', () => {
    expect(matchRoute('POST', '/meta/v1/chat/completions', '/meta/v1', META_ROUTES)).toMatchObject({
      allowed: { path: '/chat/completions' },
    });
    expect(matchRoute('POST', '/meta/v1/responses', '/meta/v1', META_ROUTES)).toMatchObject({
      refused: 'route',
    });
  });
});

describe('modelRefusal', () => {
  const body = (value: unknown) => Buffer.from(JSON.stringify(value));
  it('allows a listed model and refuses any other, a missing model and a non-JSON body', () => {
    expect(modelRefusal(body({ model: 'gpt-5.5', input: [] }), ['gpt-5.5'])).toBeNull();
    expect(modelRefusal(body({ model: 'o3-pro' }), ['gpt-5.5'])).toMatch(/"o3-pro" is not gpt-5.5/);
    expect(modelRefusal(body({ input: [] }), ['gpt-5.5'])).toMatch(/names no model/);
    expect(modelRefusal(body([{ model: 'gpt-5.5' }]), ['gpt-5.5'])).toMatch(/names no model/);
    expect(modelRefusal(Buffer.from('model=gpt-5.5'), ['gpt-5.5'])).toMatch(/not JSON/);
  });
});

describe('RateLimiter', () => {
  it('allows `limit` requests in any window and no more, then again as the window slides', () => {
    let now = 1_000_000;
    const limiter = new RateLimiter(3, 60_000, () => now);
    expect([limiter.take(), limiter.take(), limiter.take(), limiter.take()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(limiter.retryAfterSeconds()).toBe(60);
    now += 30_000;
    expect(limiter.take()).toBe(false);
    now += 30_000;
    // The first three are a minute old now: three more fit, not four.
    expect([limiter.take(), limiter.take(), limiter.take(), limiter.take()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });
});

describe('TaskBudget', () => {
  const usage = (input: number, output: number) => ({
    inputTokens: input,
    cachedInputTokens: 0,
    outputTokens: output,
    reasoningTokens: 0,
  });

  it('is spent once the Meta-agent and the worker together reach maxTokens', () => {
    const budget = new TaskBudget({ maxTokens: 1000 }, () => 0);
    budget.add({ tokens: 600, costUsd: 0 });
    budget.addWorker(usage(300, 99));
    expect(budget.exhausted()).toBeNull();
    budget.addWorker(usage(1, 0));
    expect(budget.exhausted()).toMatch(/^budget: the token budget of 1000 is spent \(1000 tokens/);
  });

  it('is spent once the cost reaches maxCostUsd, with the worker priced by its model', () => {
    const budget = new TaskBudget({ maxCostUsd: 0.01 }, (u) => (u.inputTokens + u.outputTokens) / 100_000);
    budget.addWorker(usage(500, 0));
    expect(budget.exhausted()).toBeNull();
    budget.add({ tokens: 0, costUsd: 0.005 });
    expect(budget.exhausted()).toMatch(/^budget: the cost budget of \$0.01 is spent/);
  });

  it("a subtask's budget adds every spending to the project's and is spent once the project's is", () => {
    const project = new TaskBudget({ maxTokens: 1000 }, () => 0, { spent: { tokens: 100, costUsd: 0 } });
    // Two subtasks running at once, each handed what was left when it started.
    const first = new TaskBudget({ maxTokens: 900 }, () => 0, { parent: project });
    const second = new TaskBudget({ maxTokens: 900 }, () => 0, {
      parent: project,
      spent: { tokens: 50, costUsd: 0 },
    });
    first.addWorker(usage(400, 0));
    second.add({ tokens: 300, costUsd: 0 });
    expect(first.exhausted()).toBeNull();
    expect(second.exhausted()).toBeNull();
    second.addWorker(usage(200, 0));
    // 100 + 400 + 300 + 200 = 1000 for the project (the resumed attempt's 50 was counted there already).
    expect(first.exhausted()).toMatch(/^budget: the token budget of 1000 is spent \(1000 tokens/);
    expect(second.exhausted()).toMatch(/^budget: the token budget of 1000 is spent/);
  });

  it('never runs out without limits', () => {
    const budget = new TaskBudget({}, () => 1);
    budget.addWorker(usage(10 ** 9, 10 ** 9));
    expect(budget.exhausted()).toBeNull();
  });
});
