/**
 * A hostile worker that spends: a burst of legitimate-looking model requests over `gateway.requestsPerMinute`,
 * and requests after the task's token budget is spent. Both end to end with the real codex in the sandbox.
 * In each, the probe's first requests are allowed and reach the upstream (the canary), so the refusals that
 * follow are the limit's doing, not a probe that never got through.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { decisionReply, planReply, runWorkerReply, assessmentReply } from '../support/meta-replies.js';
import { assistantMessage } from '../support/scripted-responses-server.js';
import {
  WORKER_MODEL,
  canaryReply,
  refusalsIn,
  runHostileTask,
  type HostileRun,
  type Probe,
} from './gateway-hostile-harness.js';

const legit = (index: number): Probe => ({
  name: `legit-${index}`,
  method: 'POST',
  path: '/v1/responses',
  body: { model: WORKER_MODEL, input: [{ role: 'user', content: `legit-${index}` }], stream: true },
});

const runs: HostileRun[] = [];
afterAll(async () => {
  for (const run of runs) await run.cleanup();
});

/** The probe's requests that reached the upstream (codex's own carry its tools). */
function probeRequestsUpstream(run: HostileRun): string[] {
  return run.upstream.requests
    .map((request) => request.body as { tools?: unknown; input?: { content?: string }[] })
    .filter((body) => body.tools === undefined)
    .map((body) => body.input?.[0]?.content ?? '');
}

describe('rate limit (gateway.requestsPerMinute)', () => {
  it('refuses requests over the limit with 429 before they reach the upstream', async () => {
    const id = 'sec-gw-rate';
    const run = await runHostileTask({
      taskId: id,
      // codex's first request counts too: 1 + 4 of the probe's 8 fit in the minute.
      // codex honours Retry-After on its own refused turn; the worker timeout keeps the test short.
      config: { gateway: { requestsPerMinute: 5 }, worker: { timeout: '20s', grace: '2s' } },
      meta: [
        { reply: planReply(id, [{ id: 'AC-1', description: 'probe results committed' }]) },
        { reply: runWorkerReply('Run the probe and commit its results.') },
        { reply: assessmentReply(false, ['AC-1'], 'Stopped by the rate limit.') },
        { reply: decisionReply('abort', 'The worker was cut off by the rate limit.') },
      ],
      // Four canary answers; codex's own next turn is over the limit too, so it gets none.
      replies: [canaryReply(), canaryReply(), canaryReply(), canaryReply()],
      probes: Array.from({ length: 8 }, (_, index) => legit(index + 1)),
    });
    runs.push(run);
    expect(run.probe.tokenFound).toBe(true);
    expect(run.probe.results.map((result) => result.status)).toEqual([
      200, 200, 200, 200, 429, 429, 429, 429,
    ]);
    expect(probeRequestsUpstream(run)).toEqual(['legit-1', 'legit-2', 'legit-3', 'legit-4']);
    const refused = refusalsIn(run.journal);
    expect(refused.filter((entry) => entry.reason === 'rate_limit').length).toBeGreaterThanOrEqual(4);
    expect(refused.every((entry) => entry.status === 429)).toBe(true);
    // codex's own turn after the burst was refused as well: its run failed, and the task ended as scripted.
    expect(run.summary.state).toBe('FAILED');
  });
});

describe('budget (limits.maxTokens)', () => {
  it('refuses worker requests once Meta-agent + worker usage reach the budget; the task ends NEEDS_REVIEW "budget"', async () => {
    const id = 'sec-gw-budget';
    const usage = { prompt_tokens: 100, completion_tokens: 50 };
    const run = await runHostileTask({
      taskId: id,
      // Meta-agent: 2 × 150; codex's first request: 110; each canary: 300. 410 + 300 = 710 < 1000 ≤ 1010.
      config: { limits: { maxTokens: 1000 } },
      meta: [
        { reply: planReply(id, [{ id: 'AC-1', description: 'probe results committed' }]), usage },
        { reply: runWorkerReply('Run the probe and commit its results.'), usage },
        // Never asked: the runner stops on the budget without another Meta-agent call.
        { reply: assessmentReply(true, ['AC-1'], 'unexpected') },
      ],
      replies: [
        canaryReply({ inputTokens: 290, outputTokens: 10 }),
        canaryReply({ inputTokens: 290, outputTokens: 10 }),
        canaryReply({ inputTokens: 290, outputTokens: 10 }),
        { kind: 'output', items: [assistantMessage('never sent')] },
      ],
      probes: [legit(1), legit(2), legit(3), legit(4)],
    });
    runs.push(run);
    expect(run.probe.results.map((result) => result.status)).toEqual([200, 200, 403, 403]);
    expect(run.probe.results[2]?.body).toContain('budget_exhausted');
    expect(probeRequestsUpstream(run)).toEqual(['legit-1', 'legit-2']);
    // codex's own next turn was refused too: the upstream saw its first request only.
    expect(run.upstream.requests).toHaveLength(3);
    const refused = refusalsIn(run.journal);
    expect(refused.length).toBeGreaterThanOrEqual(3);
    expect(refused.every((entry) => entry.reason === 'budget' && entry.status === 403)).toBe(true);
    expect(run.exitCode).toBe(3);
    expect(run.summary.state).toBe('NEEDS_REVIEW');
    expect(run.summary.reason).toMatch(/^budget: the token budget of 1000 is spent \(1010 tokens/);
    // The Meta-agent was not asked again after the run.
    expect(run.chat.requests).toHaveLength(2);
    // The probe's commit was still brought back to the task branch (the results were read from it).
    expect(run.probe.tokenFound).toBe(true);
  });
});

describe('budget (limits.maxCostUsd)', () => {
  it('prices the worker with its model and refuses once the cost budget is spent', async () => {
    const id = 'sec-gw-cost';
    const run = await runHostileTask({
      taskId: id,
      // $1000 per million tokens for the worker model (the Meta-agent's has no price): codex's first request
      // costs $0.11, each canary $0.30 — $0.41 < $0.50 ≤ $0.71.
      config: {
        limits: { maxCostUsd: 0.5 },
        prices: { [WORKER_MODEL]: { input: 1000, output: 1000 } },
      },
      meta: [
        { reply: planReply(id, [{ id: 'AC-1', description: 'probe results committed' }]) },
        { reply: runWorkerReply('Run the probe and commit its results.') },
      ],
      replies: [
        canaryReply({ inputTokens: 290, outputTokens: 10 }),
        canaryReply({ inputTokens: 290, outputTokens: 10 }),
        canaryReply({ inputTokens: 290, outputTokens: 10 }),
      ],
      probes: [legit(1), legit(2), legit(3)],
    });
    runs.push(run);
    expect(run.probe.results.map((result) => result.status)).toEqual([200, 200, 403]);
    expect(probeRequestsUpstream(run)).toEqual(['legit-1', 'legit-2']);
    expect(run.summary).toMatchObject({ state: 'NEEDS_REVIEW', exitCode: 3 });
    expect(run.summary.reason).toMatch(/^budget: the cost budget of \$0.5 is spent \(\$0\.7100/);
  });
});
