/**
 * The model endpoints misbehaving, for real over HTTP with the CLI as a child process: the Meta-agent's
 * endpoint answering 5xx, 429, garbage, dropping the connection or hanging (exit 5, the note written, no
 * container left), and the worker's endpoint sending an invalid event stream (the run fails, the Meta-agent
 * decides).
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  forceRemoveContainers,
  labelledContainers,
  readNote,
  runToEnd,
  SHORT_TIMEOUTS_YAML,
  writeFaultConfig,
} from '../support/faults-harness.js';
import { startFaultModelServer, type FaultMode } from '../support/faults-model-server.js';
import { assessmentReply, decisionReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { startScriptedChatServer, type ChatStep } from '../support/scripted-chat-server.js';
import { createNodeRepo, git } from '../support/task-repo.js';

const FAST_META_YAML = SHORT_TIMEOUTS_YAML.replace('requestTimeout: 5s', 'requestTimeout: 2s');

function setupRepo(taskId: string) {
  const repo = createNodeRepo();
  writeFaultConfig(repo.root, FAST_META_YAML);
  git(repo.root, 'add', 'agent-runner.yaml');
  git(repo.root, 'commit', '-q', '-m', 'config');
  onTestFinished(repo.remove);
  onTestFinished(() => forceRemoveContainers(taskId, repo.root));
  return repo.root;
}

function environment(metaUrl: string, workerUrl: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    OPENAI_BASE_URL: metaUrl,
    OPENAI_API_KEY: 'sk-test-faults-key-000000000000',
    AGENT_RUNNER_WORKER_BASE_URL: workerUrl,
    AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
    AGENT_RUNNER_NETWORK: 'open',
    CI: 'true',
  };
}

async function expectModelFailure(
  taskId: string,
  root: string,
  env: NodeJS.ProcessEnv,
  message: RegExp,
): Promise<void> {
  const result = await runToEnd(['run', '--prd', 'PRD.md', '--task-id', taskId], { cwd: root, env });
  expect(result.code, result.stderr).toBe(5);
  expect(result.stderr).toMatch(message);
  const note = readNote(root, taskId);
  expect(note).toContain('| **State** | **FAILED**');
  expect(note).toMatch(/`model_(http_error|unreachable|timeout)`/);
  expect(git(root, 'log', '-1', '--format=%s', 'main')).toBe('config');
  expect(await labelledContainers(taskId, root)).toEqual([]);
}

describe('Meta-agent endpoint faults (exit 5)', () => {
  it.each<[string, ChatStep[], RegExp]>([
    ['5xx', [{ status: 503 }, { status: 503 }], /answered HTTP 503.*Gave up after 2 attempt\(s\)/],
    [
      '429',
      [
        { status: 429, headers: { 'retry-after': '0' } },
        { status: 429, headers: { 'retry-after': '0' } },
      ],
      /answered HTTP 429/,
    ],
    ['hang', [{ hang: true }], /did not answer within 2s.*raise meta.requestTimeout/],
  ])('%s', async (name, steps, message) => {
    const id = `FAULT-META-${name.toUpperCase()}`;
    const root = setupRepo(id);
    const chat = await startScriptedChatServer(steps);
    onTestFinished(() => chat.close());
    await expectModelFailure(id, root, environment(chat.url, chat.url), message);
    expect(chat.remaining()).toBe(0);
  });

  it.each<[FaultMode, RegExp]>([
    [
      'drop',
      /Cannot reach the Meta-agent model at .* \(connection closed by the server\)\. Check meta\.baseUrl/,
    ],
    [
      'garbage',
      /answered something that is not a Chat Completions response \(.*not valid JSON.*\)\. Check that meta\.baseUrl/,
    ],
  ])('%s', async (mode, message) => {
    const id = `FAULT-META-${mode.toUpperCase()}`;
    const root = setupRepo(id);
    const server = await startFaultModelServer(mode);
    onTestFinished(() => server.close());
    await expectModelFailure(
      id,
      root,
      environment(server.baseUrl('127.0.0.1'), server.baseUrl('127.0.0.1')),
      message,
    );
    expect(server.requests()).toBeGreaterThan(0);
  });
});

describe('worker endpoint faults', () => {
  it('an invalid event stream fails the worker run; the Meta-agent hears of it and the note records it', async () => {
    const id = 'FAULT-WORKER-SSE';
    const root = setupRepo(id);
    const chat = await startScriptedChatServer([
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify.') },
      { reply: assessmentReply(false, ['AC-1'], 'The worker could not reach its model.') },
      { reply: decisionReply('abort', 'The worker model endpoint is broken.') },
    ]);
    onTestFinished(() => chat.close());
    const worker = await startFaultModelServer('invalid-sse');
    onTestFinished(() => worker.close());
    const result = await runToEnd(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], {
      cwd: root,
      env: environment(chat.url, worker.baseUrl('127.0.0.1')),
    });
    expect(result.code, result.stderr).toBe(1);
    const finished = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; failed?: boolean })
      .find((event) => event.type === 'worker_finished');
    expect(finished?.failed).toBe(true);
    expect(worker.requests()).toBeGreaterThan(0);
    // The assessment saw the failed run; the Meta-agent aborted; every scripted reply was used.
    expect(chat.remaining()).toBe(0);
    const note = readNote(root, id);
    expect(note).toContain('| **State** | **FAILED**');
    expect(note).toContain('The worker model endpoint is broken.');
    expect(await labelledContainers(id, root)).toEqual([]);
  });
});
