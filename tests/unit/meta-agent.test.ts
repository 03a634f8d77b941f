import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { AgentRunnerError, InternalError, ModelBehaviorError } from '../../src/errors.js';
import { metaWorkerOffers } from '../../src/compose/task-worker.js';
import { createMetaAgent } from '../../src/meta/meta-agent.js';
import type { LoopContext } from '../../src/meta/meta-context.js';
import { ScriptedMetaModel } from '../../src/meta/scripted-meta-model.js';

const config = validateConfig([]);

function tempDir(): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'meta-agent-'));
  onTestFinished(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

const PLAN = `type: plan_task
version: 1
payload:
  task_id: ADD-HEALTH
  acceptance_criteria:
    - id: AC-1
      description: GET /health answers 200
      type: functional
      critical: true
`;

const RUN_WORKER = `type: next_action
version: 1
payload:
  decision:
    action: run_worker
    reason: nothing done yet
  used_patterns:
    - implement_feature
  worker_call:
    worker_type: codex
    mode: exec
    prompt: |
      Add GET /health.
`;

const ASSESSMENT = `type: completion_assessment
version: 1
payload:
  all_criteria_satisfied: true
  summary: done
  by_criterion:
    - id: AC-1
      status: passed
      comment: npm test passed
  retrospective:
    - The PRD named the file.
`;

const loopContext = (overrides: Partial<LoopContext> = {}): LoopContext => ({
  taskId: 'ADD-HEALTH',
  prd: '# Add a health endpoint\nGET /health answers 200.',
  acceptanceCriteria: [
    { id: 'AC-1', description: 'GET /health answers 200', type: 'functional', critical: true },
  ],
  history: [],
  patterns: [
    { name: 'implement_feature', description: 'Implement a feature with its tests, then commit.' },
    { name: 'run_all_checks', description: 'Run every DoD check and fix failures.' },
  ],
  ...overrides,
});

describe('ScriptedMetaModel', () => {
  it('answers in order, records calls, throws past the end, and checks completeness', async () => {
    const model = new ScriptedMetaModel(['one', { text: 'two', usage: { inputTokens: 7 } }]);
    expect(() => model.assertComplete()).toThrow(/2 of 2 scripted replies were not used/);
    expect((await model.complete([{ role: 'user', content: 'a' }], { purpose: 'p' })).text).toBe('one');
    const second = await model.complete([{ role: 'user', content: 'b' }]);
    expect(second.usage.inputTokens).toBe(7);
    model.assertComplete();
    await expect(model.complete([{ role: 'user', content: 'c' }])).rejects.toThrow(InternalError);
    expect(model.calls.map((call) => call.messages[0]?.content)).toEqual(['a', 'b', 'c']);
  });
});

describe('createMetaAgent', () => {
  it('plan: sends system prompt, then the PRD, and returns the parsed plan with usage', async () => {
    const model = new ScriptedMetaModel([
      { text: PLAN, usage: { inputTokens: 1000, outputTokens: 50, costUsd: 0.01 } },
    ]);
    const agent = createMetaAgent({ model, config });
    const result = await agent.plan('# Add a health endpoint', {
      taskId: 'ADD-HEALTH',
      memory: [{ title: 'T-0', summary: 'tests run with npm test' }],
    });
    model.assertComplete();
    expect(result.message.payload.acceptance_criteria[0]?.id).toBe('AC-1');
    expect(result).toMatchObject({
      attempts: 1,
      usage: { inputTokens: 1000, outputTokens: 50, costUsd: 0.01 },
    });
    const [system, stable, varying] = model.calls[0]?.messages ?? [];
    expect(system?.role).toBe('system');
    expect(system?.content).toContain('The task id is `ADD-HEALTH`');
    expect(system?.content).toContain(
      '- payload.acceptance_criteria[].check.kind (required): text — how the criterion can be verified: command | test | file_exists | manual | playwright or another label',
    );
    expect(system?.content).toContain('task_id: ADD-HEALTH-ENDPOINT'); // the example from protocols/
    expect(stable?.content).toMatch(/^# Task ADD-HEALTH\n\n## PRD\n```markdown\n# Add a health endpoint/);
    expect(varying?.content).toContain('- T-0: tests run with npm test');
  });

  it('nextAction: offers the patterns and actions, and checks used_patterns against them', async () => {
    const model = new ScriptedMetaModel([RUN_WORKER]);
    const agent = createMetaAgent({ model, config });
    const result = await agent.nextAction(loopContext());
    expect(result.message.payload.worker_call).toEqual({
      worker_type: 'codex',
      mode: 'exec',
      prompt: 'Add GET /health.\n',
    });
    const system = model.calls[0]?.messages[0]?.content ?? '';
    expect(system).toContain('- `implement_feature`: Implement a feature with its tests, then commit.');
    expect(system).toContain('- `ask_human`:');
    expect(system).toContain('(not possible yet: there is no earlier thread)');
    expect(system).not.toContain('&amp;'); // no HTML escaping in prompts
  });

  it('nextAction: lists the configured workers with a line on each, and refuses a worker not offered', async () => {
    const model = new ScriptedMetaModel([
      RUN_WORKER.replace('worker_type: codex', 'worker_type: gemini'),
      RUN_WORKER,
    ]);
    const agent = createMetaAgent({
      model,
      config,
      ...metaWorkerOffers(
        validateConfig([{ source: 'test', values: { workers: { claude: { model: 'claude-x' } } } }]),
      ),
    });
    const result = await agent.nextAction(loopContext());
    expect(result.message.payload.worker_call?.worker_type).toBe('codex');
    const system = model.calls[0]?.messages[0]?.content ?? '';
    expect(system).toContain('- `worker_type`: one of `codex`, `claude`.');
    expect(system).toContain("  - `claude` (model claude-x): Anthropic's Claude Code");
    expect(system).toContain('  - `codex` (model gpt-5.5): OpenAI Codex CLI');
    // gemini was not offered: the reply was sent back with that error and repaired.
    expect(JSON.stringify(model.calls[1]?.messages)).toContain(
      'unknown worker type `gemini`; use one of: codex, claude',
    );
  });

  it('one worker: no list of workers in the prompt', async () => {
    const model = new ScriptedMetaModel([RUN_WORKER]);
    await createMetaAgent({ model, config, ...metaWorkerOffers(config) }).nextAction(loopContext());
    expect(model.calls[0]?.messages[0]?.content).not.toContain('The workers offered');
  });

  it('the system prompt and the stable message do not change between calls (prompt caching)', async () => {
    const model = new ScriptedMetaModel([RUN_WORKER, RUN_WORKER.replace('mode: exec', 'mode: resume')]);
    const agent = createMetaAgent({ model, config });
    await agent.nextAction(loopContext({ canResume: true }));
    await agent.nextAction(
      loopContext({
        canResume: true,
        history: [{ iteration: 1, action: 'run_worker', reason: 'start', exitCode: 0 }],
      }),
    );
    const [first, second] = model.calls;
    expect(second?.messages[0]).toEqual(first?.messages[0]);
    expect(second?.messages[1]).toEqual(first?.messages[1]);
    expect(second?.messages[2]).not.toEqual(first?.messages[2]);
  });

  it('assess: returns the assessment and shows the facts', async () => {
    const model = new ScriptedMetaModel([ASSESSMENT]);
    const agent = createMetaAgent({ model, config });
    const result = await agent.assess(loopContext(), {
      summary: 'exit 0, 1 commit on the task branch, tree clean',
      dodResults: [
        { name: 'test', command: 'npm test', status: 'passed', exitCode: 0, durationMs: 5, outputTail: '' },
      ],
      criteriaChecks: [
        {
          criterionId: 'AC-1',
          critical: true,
          kind: 'playwright',
          target: 'tests/e2e/health.spec.ts "GET /health"',
          status: 'not_executed',
          exitCode: null,
          durationMs: 0,
          outputTail: '',
          reason: 'agent-runner does not execute checks of kind `playwright`',
          ranOnDirtyTree: false,
        },
      ],
      diff: '+app.get("/health")',
    });
    expect(result.message.payload.all_criteria_satisfied).toBe(true);
    const varying = model.calls[0]?.messages[2]?.content ?? '';
    expect(varying).toContain('- test (`npm test`): passed, exit 0');
    expect(varying).toContain('+app.get("/health")');
    // The assessor sees the criteria's checks, including a kind the runner does not execute.
    expect(varying).toContain(
      '- AC-1 (critical) playwright `tests/e2e/health.spec.ts "GET /health"`: not executed',
    );
  });

  it('repair succeeds on the second reply: the errors are sent back with lines and paths', async () => {
    const bad = RUN_WORKER.replace(
      '    reason: nothing done yet\n',
      '    reason: &r nothing done yet\n',
    ).replace('implement_feature', 'make_coffee');
    const model = new ScriptedMetaModel([
      bad,
      RUN_WORKER.replace('implement_feature', 'make_coffee'),
      RUN_WORKER,
    ]);
    const logDir = tempDir();
    const agent = createMetaAgent({ model, config, logDir });
    const result = await agent.nextAction(loopContext());
    model.assertComplete();
    expect(result.attempts).toBe(3);
    expect(result.rawReplies).toEqual([bad, expect.any(String), RUN_WORKER]);
    const secondCall = model.calls[1]?.messages ?? [];
    expect(secondCall.at(-2)).toEqual({ role: 'assistant', content: bad });
    expect(secondCall.at(-1)?.content).toContain(
      '- line 6, column 13: the anchor `&r` is refused: anchors and aliases are not allowed, write each value out in full',
    );
    expect(model.calls[2]?.messages.at(-1)?.content).toContain(
      '- payload.used_patterns[0] (line 8, column 7): unknown pattern `make_coffee`; the known patterns are: implement_feature, run_all_checks',
    );
    const files = readdirSync(logDir).sort();
    expect(files).toEqual([
      '0001-next_action-attempt1.md',
      '0002-next_action-attempt2.md',
      '0003-next_action-attempt3.md',
    ]);
    expect(readFileSync(path.join(logDir, files[0] ?? ''), 'utf8')).toContain('the anchor `&r` is refused');
  });

  it('repair exhausted: ModelBehaviorError(protocol_invalid) keeps every raw reply, in details and on disk', async () => {
    const replies = [
      'I think we should run the worker.',
      'type: next_action\nversion: 1\npayload: !!map {}\n',
      'type: next_action\nversion: 2\n',
    ];
    const model = new ScriptedMetaModel(replies);
    const logDir = tempDir();
    const agent = createMetaAgent({ model, config, logDir });
    const error = await agent.nextAction(loopContext()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelBehaviorError);
    const modelError = error as ModelBehaviorError;
    expect(modelError.code).toBe('protocol_invalid');
    expect(modelError.exitCode).toBe(5);
    expect(modelError.message).toContain(
      'still invalid after 2 repair(s): version (line 2, column 10): unsupported version `2`',
    );
    expect(modelError.details.rawReplies).toEqual(replies);
    const rawFile = modelError.details.rawRepliesFile as string;
    expect(path.basename(rawFile)).toBe('0004-next_action-protocol-invalid.txt');
    const raw = readFileSync(rawFile, 'utf8');
    for (const reply of replies) expect(raw).toContain(reply);
  });

  it('maxRepairs 0 fails on the first invalid reply', async () => {
    const model = new ScriptedMetaModel(['nope: 1']);
    const agent = createMetaAgent({
      model,
      config: validateConfig([{ source: 'test', values: { meta: { maxRepairs: 0 } } }]),
    });
    await expect(agent.plan('prd', { taskId: 'T' })).rejects.toMatchObject({ code: 'protocol_invalid' });
    model.assertComplete();
  });

  it('a model error is not repaired: it propagates as it is', async () => {
    const unreachable = new ModelBehaviorError('model_unreachable', 'down');
    const model = new ScriptedMetaModel([{ error: unreachable }]);
    const agent = createMetaAgent({ model, config, logDir: tempDir() });
    await expect(agent.plan('prd', { taskId: 'T' })).rejects.toBe(unreachable);
    expect(unreachable).toBeInstanceOf(AgentRunnerError);
  });
});
