/**
 * Record a whole run (Meta-agent and worker exchanges) and replay it with no upstream: same final state,
 * same commit content, same note apart from times, durations and ids. A changed PRD under replay diverges.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { runCliCaptured } from '../support/cli.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { startScriptedChatServer, type ScriptedChatServer } from '../support/scripted-chat-server.js';
import {
  ScriptedResponsesServer,
  assistantMessage,
  commandCall,
} from '../support/scripted-responses-server.js';
import { SLUG_JS, SLUG_TEST_JS, createNodeRepo, git, writeFileCommand } from '../support/task-repo.js';
import { taskContainers } from '../support/task-containers.js';

const ID = 'E2E-REPLAY';
const KEY = 'replay-test-key-4d2c7b19';
let chat: ScriptedChatServer;
let responses: ScriptedResponsesServer;
let closedUrl = '';

beforeAll(async () => {
  chat = await startScriptedChatServer();
  responses = await new ScriptedResponsesServer().start();
  // A port that was just closed: nothing answers there, so a replay that reached for an upstream would fail.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  closedUrl = `http://127.0.0.1:${port}/v1`;
});
afterAll(async () => {
  await chat?.close();
  await responses?.close();
});

async function runIn(root: string, args: string[], env: NodeJS.ProcessEnv) {
  onTestFinished(async () => {
    expect(await taskContainers(ID, root)).toEqual([]);
  });
  const result = await runCliCaptured(['run', '--prd', 'PRD.md', '--task-id', ID, '--json', ...args], {
    cwd: root,
    env: { ...process.env, CI: 'true', ...env },
  });
  const lines = result.stdout.trim().split('\n');
  const summary = JSON.parse(lines.at(-1) ?? '{}') as {
    state: string;
    notePath: string;
    error: { code: string; message: string } | null;
  };
  const note = summary.notePath && existsSync(summary.notePath) ? readFileSync(summary.notePath, 'utf8') : '';
  return { result, summary, note };
}

/** The note without what legitimately differs between two runs: paths, times, durations, object ids. */
function stable(note: string, root: string): string {
  return note
    .replaceAll(root, '<repo>')
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, '<time>')
    .replace(/\b(\d+m)?\d+(\.\d+)?(ms|s)\b/g, '<duration>')
    .replace(/\b[0-9a-f]{7,40}\b/g, '<id>');
}

describe('record and replay of a whole run', () => {
  it('replays with no upstream to the same state, commits and note; a changed PRD diverges', async () => {
    chat.push(
      { reply: planReply(ID, [{ id: 'AC-1', description: 'slugify works and is tested' }]) },
      { reply: runWorkerReply('Implement slugify with a test in slug.test.js, run npm test, commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'slugify is committed and npm test passes.') },
    );
    responses.enqueue(
      {
        kind: 'output',
        items: [
          commandCall(
            `${writeFileCommand('slug.js', SLUG_JS)}\n${writeFileCommand('slug.test.js', SLUG_TEST_JS)}`,
          ),
        ],
        usage: { inputTokens: 200, outputTokens: 20 },
      },
      {
        kind: 'output',
        items: [
          commandCall(
            'npm test 2>&1 | tail -n 3 && git add -A && git commit -q -m "Add slugify" && git log --oneline -1',
          ),
        ],
        usage: { inputTokens: 250, outputTokens: 25 },
      },
      {
        kind: 'output',
        items: [assistantMessage('Committed slugify.')],
        usage: { inputTokens: 300, outputTokens: 30 },
      },
    );
    const cassetteDir = createNodeRepo();
    onTestFinished(cassetteDir.remove);
    const cassette = path.join(cassetteDir.root, 'run.cassette.json');
    const recorded = createNodeRepo();
    onTestFinished(recorded.remove);
    const live = await runIn(recorded.root, ['--record', cassette], {
      OPENAI_BASE_URL: chat.url,
      OPENAI_API_KEY: KEY,
      AGENT_RUNNER_WORKER_BASE_URL: responses.baseUrl('127.0.0.1'),
      AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
    });
    expect(live.summary.state).toBe('COMPLETE');
    expect(readFileSync(cassette, 'utf8')).not.toContain(KEY);
    const requestsSeen = chat.requests.length + responses.requests.length;

    // Replay: no key, every endpoint closed.
    const replayed = createNodeRepo();
    onTestFinished(replayed.remove);
    const replay = await runIn(replayed.root, ['--replay', cassette], {
      OPENAI_BASE_URL: closedUrl,
      OPENAI_API_KEY: '',
      AGENT_RUNNER_WORKER_BASE_URL: closedUrl,
      AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
    });
    expect(replay.result.exitCode).toBe(0);
    expect(replay.summary.state).toBe('COMPLETE');
    expect(chat.requests.length + responses.requests.length).toBe(requestsSeen);
    const tree = (root: string) => git(root, 'rev-parse', `agent-runner/${ID}^{tree}`);
    expect(tree(replayed.root)).toBe(tree(recorded.root));
    expect(git(replayed.root, 'log', '-1', '--format=%s', `agent-runner/${ID}`)).toBe('Add slugify');
    expect(stable(replay.note, replayed.root)).toBe(stable(live.note, recorded.root));

    // A changed PRD asks something else: the replay names where it diverged.
    const changed = createNodeRepo();
    onTestFinished(changed.remove);
    writeFileSync(
      path.join(changed.root, 'PRD.md'),
      '# Add kebab-case\n\nAdd kebabCase(text) in kebab.js.\n',
    );
    git(changed.root, 'commit', '-q', '-am', 'another PRD');
    const diverged = await runIn(changed.root, ['--replay', cassette], {
      OPENAI_BASE_URL: closedUrl,
      OPENAI_API_KEY: '',
      AGENT_RUNNER_WORKER_BASE_URL: closedUrl,
    });
    expect(diverged.result.exitCode).toBe(2);
    expect(diverged.summary.state).toBe('FAILED');
    expect(diverged.summary.error?.code).toBe('replay_diverged');
    expect(diverged.summary.error?.message).toMatch(/diverged at meta call #1 .*Add kebab-case/);
    expect(diverged.note).toContain('replay_diverged');
  });
});
