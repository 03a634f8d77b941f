import { describe, expect, it } from 'vitest';
import {
  META_ROUTES,
  RateLimiter,
  WORKER_ROUTES,
  matchRoute,
  modelRefusal,
} from '../../src/gateway/request-policy.js';
import { Ledger } from '../../src/core/ledger.js';
import type { SpendingLimits } from '../../src/core/limits.js';
import { ledgerBudget } from '../../src/gateway/gateway-budget.js';

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

describe('the gateway budget (a ledger as the gateway sees it)', () => {
  const usage = (input: number, output: number) => ({
    inputTokens: input,
    cachedInputTokens: 0,
    outputTokens: output,
    reasoningTokens: 0,
  });
  const meta = (tokens: number, costUsd = 0) => ({ ...usage(tokens, 0), costUsd });
  const clock = { now: () => 0 };
  const limits = (extra: Partial<SpendingLimits>): SpendingLimits => ({
    wallClock: 60_000,
    maxMetaCalls: 100,
    ...extra,
  });

  it('is spent once the Meta-agent and the worker together reach maxTokens', () => {
    const ledger = new Ledger(limits({ maxTokens: 1000 }), clock);
    const budget = ledgerBudget(ledger, () => 0);
    ledger.countMeta(meta(600));
    budget.meterWorker(usage(300, 99));
    expect(budget.refusal()).toBeNull();
    budget.meterWorker(usage(1, 0));
    expect(budget.refusal()).toMatch(/^budget: the token budget of 1000 is spent \(1000 tokens/);
  });

  it('is spent once the cost reaches maxCostUsd, with the worker priced by its model', () => {
    const ledger = new Ledger(limits({ maxCostUsd: 0.01 }), clock);
    const budget = ledgerBudget(ledger, (u) => (u.inputTokens + u.outputTokens) / 100_000);
    budget.meterWorker(usage(500, 0));
    expect(budget.refusal()).toBeNull();
    ledger.countMeta(meta(0, 0.005));
    expect(budget.refusal()).toMatch(/^budget: the cost budget of \$0.01 is spent/);
  });

  it("a subtask's ledger adds every spending to the project's and is spent once the project's is", () => {
    const project = new Ledger(limits({ maxTokens: 1000 }), clock, { earlier: { meta: meta(100) } });
    // Two subtasks running at once, each handed what was left when it started.
    const first = new Ledger(limits({ maxTokens: 900 }), clock, { parent: project });
    const second = new Ledger(limits({ maxTokens: 900 }), clock, {
      parent: project,
      earlier: { meta: meta(50) },
    });
    const firstBudget = ledgerBudget(first, () => 0);
    const secondBudget = ledgerBudget(second, () => 0);
    firstBudget.meterWorker(usage(400, 0));
    second.countMeta(meta(300));
    expect(firstBudget.refusal()).toBeNull();
    expect(secondBudget.refusal()).toBeNull();
    secondBudget.meterWorker(usage(200, 0));
    // 100 + 400 + 300 + 200 = 1000 for the project (the resumed attempt's 50 was counted there already).
    expect(firstBudget.refusal()).toMatch(
      /^budget: the project's token budget of 1000 is spent \(1000 tokens/,
    );
    expect(secondBudget.refusal()).toMatch(/^budget: the project's token budget of 1000 is spent/);
  });

  it("a run's recorded usage replaces what the gateway metered during it, here and in the project", () => {
    const project = new Ledger(limits({}), clock);
    const task = new Ledger(limits({}), clock, { parent: project });
    ledgerBudget(task, () => 0).meterWorker(usage(400, 100));
    expect(project.usage().worker.inputTokens).toBe(400);
    task.recordWorkerRun({ ...usage(400, 100), costUsd: 0.5 });
    expect(task.usage().worker).toMatchObject({ inputTokens: 400, outputTokens: 100, costUsd: 0.5 });
    expect(project.usage().worker).toMatchObject({ inputTokens: 400, outputTokens: 100, costUsd: 0.5 });
  });

  it('never runs out without limits', () => {
    const budget = ledgerBudget(new Ledger(limits({}), clock), () => 1);
    budget.meterWorker(usage(10 ** 9, 10 ** 9));
    expect(budget.refusal()).toBeNull();
  });
});
