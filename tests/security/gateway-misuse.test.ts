/**
 * A hostile worker spends the gateway on what it wants: other API routes, another model, traversal out of
 * the base path (plain, encoded, double-encoded, backslashes), the Meta-agent's route, a 64 MiB body and a
 * 64 KiB header. One real run: codex runs the probe in the sandbox with the token from its own environment.
 * The canary (a legitimate POST /v1/responses with the configured model, from the same probe) must reach the
 * upstream, so a probe that could not reach the gateway at all would fail this test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { assistantMessage } from '../support/scripted-responses-server.js';
import {
  WORKER_MODEL,
  canaryReply,
  refusalsIn,
  resultOf,
  runHostileTask,
  type HostileRun,
  type Probe,
} from './gateway-hostile-harness.js';

const ID = 'sec-gw-misuse';
const responsesBody = (model: string, marker: string) => ({
  model,
  input: [{ role: 'user', content: marker }],
  stream: true,
});

const PROBES: Probe[] = [
  { name: 'canary', method: 'POST', path: '/v1/responses', body: responsesBody(WORKER_MODEL, 'canary-1') },
  {
    name: 'chat-completions',
    method: 'POST',
    path: '/v1/chat/completions',
    body: { model: WORKER_MODEL, messages: [{ role: 'user', content: 'chat-probe' }] },
  },
  {
    name: 'other-model',
    method: 'POST',
    path: '/v1/responses',
    body: responsesBody('gpt-4.1-expensive', 'x'),
  },
  { name: 'files', method: 'POST', path: '/v1/files', body: { purpose: 'batch', file: 'files-probe' } },
  { name: 'models', method: 'GET', path: '/v1/models' },
  { name: 'dotdot', method: 'GET', path: '/v1/../anything' },
  {
    name: 'dotdot-responses',
    method: 'POST',
    path: '/v1/../v1/responses',
    body: responsesBody(WORKER_MODEL, 'x'),
  },
  { name: 'encoded-dotdot', method: 'GET', path: '/v1/%2e%2e/anything' },
  { name: 'encoded-slash', method: 'POST', path: '/v1/..%2ffiles', body: { purpose: 'x' } },
  { name: 'double-encoded', method: 'GET', path: '/v1/%252e%252e/anything' },
  { name: 'backslash', method: 'GET', path: '/v1\\..\\anything' },
  { name: 'query', method: 'POST', path: '/v1/responses?x=1', body: responsesBody(WORKER_MODEL, 'x') },
  {
    name: 'meta-route',
    method: 'POST',
    path: '/meta/v1/chat/completions',
    body: { model: 'gpt-5.5', messages: [{ role: 'user', content: 'meta-probe' }] },
  },
  { name: 'huge-body', method: 'POST', path: '/v1/responses', bodyBytes: 64 * 1024 * 1024 },
  {
    name: 'huge-header',
    method: 'POST',
    path: '/v1/responses',
    headerBytes: 64 * 1024,
    body: responsesBody(WORKER_MODEL, 'x'),
  },
  // After all that, the legitimate route still works (the connection-level refusals did not break the relay).
  {
    name: 'canary-after',
    method: 'POST',
    path: '/v1/responses',
    body: responsesBody(WORKER_MODEL, 'canary-2'),
  },
];

const REFUSED: [name: string, status: number, reason: string][] = [
  ['chat-completions', 403, 'route'],
  ['other-model', 403, 'model'],
  ['files', 403, 'route'],
  ['models', 403, 'route'],
  ['dotdot', 403, 'path'],
  ['dotdot-responses', 403, 'path'],
  ['encoded-dotdot', 403, 'path'],
  ['encoded-slash', 403, 'path'],
  ['double-encoded', 403, 'path'],
  ['backslash', 403, 'path'],
  ['query', 403, 'route'],
  ['meta-route', 403, 'route'],
];

let run: HostileRun;

beforeAll(async () => {
  run = await runHostileTask({
    taskId: ID,
    config: { gateway: { maxRequestBytes: '4m' } },
    meta: [
      { reply: planReply(ID, [{ id: 'AC-1', description: 'probe results committed' }]) },
      { reply: runWorkerReply('Run the probe and commit its results.') },
      { reply: assessmentReply(true, ['AC-1'], 'The probe results are committed.') },
    ],
    replies: [canaryReply(), canaryReply(), { kind: 'output', items: [assistantMessage('Probed.')] }],
    probes: PROBES,
  });
}, 600_000);
afterAll(() => run?.cleanup());

describe('the gateway against a hostile worker (real codex, real sandbox)', () => {
  it('the canary: the probe found the token and its legitimate requests reached the upstream', () => {
    expect(run.probe.tokenFound).toBe(true);
    expect(resultOf(run, 'canary')).toMatchObject({ status: 200 });
    expect(resultOf(run, 'canary').body).toContain('canary answer');
    expect(resultOf(run, 'canary-after')).toMatchObject({ status: 200 });
    expect(run.summary.state).toBe('COMPLETE');
  });

  it('only POST /v1/responses with the configured model ever reached the upstream', () => {
    const seen = run.upstream.requests.map((request) => ({
      method: request.method,
      path: request.path,
      model: (request.body as { model?: string } | null)?.model,
    }));
    // codex's own two turns and the probe's two canaries: nothing else.
    expect(seen).toEqual(Array(4).fill({ method: 'POST', path: '/v1/responses', model: WORKER_MODEL }));
    // The probe's own requests (no codex tools in them) are exactly the two canaries.
    const probeInputs = run.upstream.requests
      .map((request) => request.body as { tools?: unknown; input?: { content?: string }[] })
      .filter((body) => body.tools === undefined)
      .map((body) => body.input?.[0]?.content);
    expect(probeInputs).toEqual(['canary-1', 'canary-2']);
  });

  it.each(REFUSED)('%s is refused with %i (%s)', (name, status, reason) => {
    expect(resultOf(run, name)).toMatchObject({ status, error: null });
    const refusal = refusalsIn(run.journal).find(
      (entry) => entry.path === PROBES.find((p) => p.name === name)?.path,
    );
    expect(refusal).toMatchObject({ status, reason });
  });

  it('a 64 MiB body is cut at gateway.maxRequestBytes, counted as it streams', () => {
    const huge = resultOf(run, 'huge-body');
    // The gateway answers 413 and closes; a client still writing may see the reset before the answer.
    if (huge.status !== null) expect(huge.status).toBe(413);
    else expect(huge.error).toMatch(/ECONNRESET|EPIPE|socket hang up/);
    const refusal = refusalsIn(run.journal).find((entry) => entry.reason === 'body_too_large');
    expect(refusal?.status).toBe(413);
    // It stopped reading just past the cap (4 MiB) instead of taking in the 64 MiB.
    const seen = Number(/at least (\d+) sent/.exec(refusal?.detail ?? '')?.[1]);
    expect(seen).toBeGreaterThan(4 * 1024 * 1024);
    expect(seen).toBeLessThan(8 * 1024 * 1024);
  });

  it('a 64 KiB header is refused with 431', () => {
    expect(resultOf(run, 'huge-header').status).toBe(431);
    expect(refusalsIn(run.journal).some((entry) => entry.reason === 'headers_too_large')).toBe(true);
  });

  it('every refusal is an event on stdout (--json) and in the journal', () => {
    const printed = refusalsIn(run.events);
    expect(printed.length).toBe(REFUSED.length + 2);
    expect(refusalsIn(run.journal)).toEqual(printed);
  });
});
