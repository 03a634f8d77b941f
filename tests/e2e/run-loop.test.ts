/**
 * The whole product end to end: `agent-runner run` with the real CLI, real git, a real Docker sandbox and the
 * real codex binary; only the models are scripted (Chat Completions for the Meta-agent, Responses for codex).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { runCliCaptured } from '../support/cli.js';
import { assessmentReply, decisionReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { assistantMessage, commandCall, type ScriptedReply } from '../support/scripted-responses-server.js';
import {
  SLUG_BROKEN_JS,
  SLUG_JS,
  SLUG_TEST_JS,
  createNodeRepo,
  git,
  writeFileCommand,
} from '../support/task-repo.js';

const docker = createDockerClient();
/** Not shaped like any well-known key, so only the known-value redaction can catch it. */
const KEY = 'e2e-secret-key-value-7f3a9c21';
const models = scriptedModelServers();

/** One codex turn that runs `commands` one per response, then says `message`. */
function codexTurn(commands: string[], message: string): ScriptedReply[] {
  return [
    ...commands.map((command): ScriptedReply => ({
      kind: 'output',
      items: [commandCall(command)],
      usage: { inputTokens: 200, outputTokens: 20 },
    })),
    { kind: 'output', items: [assistantMessage(message)], usage: { inputTokens: 300, outputTokens: 30 } },
  ];
}

const commitSlug = (slug: string, message: string) =>
  codexTurn(
    [
      `${writeFileCommand('slug.js', slug)}\n${writeFileCommand('slug.test.js', SLUG_TEST_JS)}`,
      `git add -A && git commit -q -m ${JSON.stringify(message)}`,
    ],
    `Committed: ${message}`,
  );

async function run(taskId: string, extraArgs: string[] = []) {
  const repo = createNodeRepo();
  onTestFinished(repo.remove);
  onTestFinished(async () => {
    // This run's containers: another checkout's run of this file on the same engine uses the same task ids.
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`agent-runner.task=${taskId}`, `agent-runner.repo=${realpathSync(repo.root)}`] },
    });
    expect(left).toEqual([]);
  });
  const result = await runCliCaptured(
    ['run', '--prd', 'PRD.md', '--task-id', taskId, '--json', ...extraArgs],
    {
      cwd: repo.root,
      env: {
        ...process.env,
        OPENAI_BASE_URL: models.chat.url,
        OPENAI_API_KEY: KEY,
        AGENT_RUNNER_WORKER_BASE_URL: models.responses.baseUrl('127.0.0.1'),
        AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
        CI: 'true',
      },
    },
  );
  const lines = result.stdout.trim().split('\n').filter(Boolean);
  const events = lines.map((line) => JSON.parse(line) as { type: string; [key: string]: unknown });
  const summary = events.at(-1) as {
    type: string;
    state: string;
    notePath: string;
    headSha: string;
    branch: string;
    exitCode: number;
  };
  const note = summary.notePath && existsSync(summary.notePath) ? readFileSync(summary.notePath, 'utf8') : '';
  return { repo, result, events, summary, note };
}

describe('agent-runner run (end to end)', () => {
  it('happy path: plan → codex writes and commits → DoD passes → COMPLETE', async () => {
    const id = 'E2E-HAPPY';
    const replies = [
      planReply(id, [{ id: 'AC-1', description: 'slugify("Hello Big World") is "hello-big-world"' }]),
      runWorkerReply('Implement slugify in slug.js with a test in slug.test.js, run npm test, commit.'),
      assessmentReply(true, ['AC-1'], 'slugify is implemented, tested and committed.'),
    ];
    models.chat.push(...replies.map((reply) => ({ reply })));
    // What the scripted Chat server reports per reply: 100 prompt tokens, and a completion of length / 4.
    const metaTokens = replies.reduce((sum, reply) => sum + 100 + Math.ceil(reply.length / 4), 0);
    models.responses.enqueue(...commitSlug(SLUG_JS, 'Add slugify'));
    const { repo, result, events, summary, note } = await run(id);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(summary).toMatchObject({
      type: 'summary',
      state: 'COMPLETE',
      branch: `agent-runner/${id}`,
      exitCode: 0,
    });
    // The commit is on the user's task branch and in the worktree a person opens.
    expect(git(repo.root, 'log', '-1', '--format=%s', `agent-runner/${id}`)).toBe('Add slugify');
    expect(git(repo.root, 'rev-parse', `agent-runner/${id}`)).toBe(summary.headSha);
    const worktree = path.join(repo.root, '.agent-runner', 'worktrees', id);
    expect(readFileSync(path.join(worktree, 'slug.js'), 'utf8')).toBe(SLUG_JS);
    expect(statSync(path.join(worktree, 'slug.js')).uid).toBe(statSync(repo.root).uid);
    // The user's own branch and tree are untouched.
    expect(git(repo.root, 'log', '-1', '--format=%s', 'main')).toBe('initial');
    expect(existsSync(path.join(repo.root, 'slug.js'))).toBe(false);
    // Events: every transition, the worker's commands, DoD.
    const states = events.filter((event) => event.type === 'transition').map((event) => event.to);
    expect(states).toEqual(['PLANNING', 'RUNNING', 'VALIDATING', 'COMPLETE']);
    expect(
      events.some(
        (event) =>
          event.type === 'worker_event' && (event.event as { kind: string }).kind === 'command_started',
      ),
    ).toBe(true);
    const dod = events.find((event) => event.type === 'dod') as unknown as {
      dod: { status: string; results: { name: string; status: string }[] };
    };
    expect(dod.dod.status).toBe('passed');
    // The note: AC table, one run with its commands, DoD results, head sha.
    expect(note).toContain('| **State** | **COMPLETE**');
    expect(note).toMatch(
      /\| AC-1 \| slugify\("Hello Big World"\) is "hello-big-world" \| functional \| yes \| — \| — \| ✅ passed/,
    );
    expect(note).toContain('### Run 1 (codex exec');
    expect(note).toContain('git add -A');
    expect(note).toMatch(/\| test \| `npm test` \| ✅ passed/);
    expect(note).toContain(summary.headSha);
    // Worker usage is what the scripted upstream sent through the gateway: 2 × (200 + 20) + (300 + 30).
    expect(note).toContain(`| Tokens | ${metaTokens + 770} in total: Meta-agent ${metaTokens}, worker 770 |`);
    // The upstream saw the real key; the sandbox only had the gateway's per-task token.
    const auth = models.responses.requests.map((request) => request.headers.authorization);
    expect(auth.length).toBeGreaterThan(0);
    expect(auth).toEqual(auth.map(() => `Bearer ${KEY}`));
  });

  it('redacts a key that shows up in the worker output from logs, events and the note', async () => {
    const id = 'E2E-REDACT';
    models.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'Done.') },
    );
    models.responses.enqueue(
      ...codexTurn([`echo "the key is ${KEY}"`], 'Printed it.').slice(0, 1),
      ...commitSlug(SLUG_JS, 'Add slugify'),
    );
    const { repo, summary, note } = await run(id);
    expect(summary.state).toBe('COMPLETE');
    expect(note).toContain('the key is [REDACTED]');
    const stateDir = path.join(repo.root, '.agent-runner');
    // Everything agent-runner keeps: events, worker JSONL and stderr, Meta-agent call logs, codex's sessions, the note.
    const search = spawnSync('grep', ['-rl', KEY, stateDir], { encoding: 'utf8' });
    expect(search.stdout).toBe('');
    expect(search.status).toBe(1);
    const control = spawnSync('grep', ['-rl', 'REDACTED', path.join(stateDir, 'runs', id)], {
      encoding: 'utf8',
    });
    expect(control.stdout).toContain('codex.jsonl');
  });

  it('fix loop: a failing test → FIXING → second run fixes it → COMPLETE with two runs', async () => {
    const id = 'E2E-FIX';
    models.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works and its test passes' }]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(false, ['AC-1'], 'The test fails.') },
      {
        reply: runWorkerReply('npm test fails: fix slugify so the test passes, then commit.', {
          patterns: ['fix_failing_checks', 'commit_work'],
        }),
      },
      { reply: assessmentReply(true, ['AC-1'], 'Fixed; the test passes.') },
    );
    models.responses.enqueue(
      ...commitSlug(SLUG_BROKEN_JS, 'Add slugify'),
      ...codexTurn([`${writeFileCommand('slug.js', SLUG_JS)}\ngit commit -q -am 'Fix slugify'`], 'Fixed.'),
    );
    const { summary, note, events } = await run(id);
    expect(summary.state).toBe('COMPLETE');
    const states = events.filter((event) => event.type === 'transition').map((event) => event.to);
    expect(states).toEqual([
      'PLANNING',
      'RUNNING',
      'VALIDATING',
      'FIXING',
      'RUNNING',
      'VALIDATING',
      'COMPLETE',
    ]);
    expect(note).toContain('### Run 1');
    expect(note).toContain('### Run 2');
    expect(note).toContain('DoD checks failing: test');
  });

  it('refuses mark_complete while DoD fails, and goes on', async () => {
    const id = 'E2E-REFUSE';
    models.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'Looks done to me.') },
      { reply: decisionReply('mark_complete', 'The worker says it is done.') },
      { reply: decisionReply('abort', 'Giving up after the refusal.') },
    );
    models.responses.enqueue(...commitSlug(SLUG_BROKEN_JS, 'Add slugify'));
    const { summary, events } = await run(id);
    const refusals = events
      .filter((event) => event.type === 'refused')
      .map((event) => (event.reasons as string[]).join(' '));
    expect(refusals[1]).toMatch(/mark_complete refused: .*DoD checks failing: test/);
    expect(summary.state).toBe('FAILED');
    expect(summary.exitCode).toBe(1);
  });

  it('headless ask_human → NEEDS_REVIEW, exit 3, the question in the note', async () => {
    const id = 'E2E-ASK';
    models.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      {
        reply: decisionReply(
          'ask_human',
          'The PRD does not say how to treat accents.',
          'Should slugify strip accents (é → e)?',
        ),
      },
    );
    const { result, summary, note } = await run(id);
    expect(result.exitCode).toBe(3);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(note).toContain('## Question for you\n> Should slugify strip accents (é → e)?');
  });

  it('max iterations → NEEDS_REVIEW with the work on the branch', async () => {
    const id = 'E2E-LIMIT';
    models.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(false, ['AC-1'], 'The test fails.') },
      { reply: runWorkerReply('Fix it.') },
    );
    models.responses.enqueue(...commitSlug(SLUG_BROKEN_JS, 'Add slugify (first try)'));
    const { repo, result, summary, note } = await run(id, ['--max-iterations', '1']);
    expect(result.exitCode).toBe(3);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(note).toContain('the limit of 1 worker runs was reached');
    expect(git(repo.root, 'log', '-1', '--format=%s', `agent-runner/${id}`)).toBe('Add slugify (first try)');
  });

  it('abort → FAILED, exit 1, note written; --json is JSONL ending with the summary', async () => {
    const id = 'E2E-ABORT';
    models.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: decisionReply('abort', 'The PRD asks for two contradictory behaviours.') },
    );
    const { result, events, summary, note } = await run(id);
    expect(result.exitCode).toBe(1);
    expect(summary).toMatchObject({ type: 'summary', state: 'FAILED', exitCode: 1 });
    expect(note).toContain('the Meta-agent aborted: The PRD asks for two contradictory behaviours.');
    // Every stdout line is one JSON object with a type; only the last is the summary.
    expect(events.every((event) => typeof event.type === 'string')).toBe(true);
    expect(events.filter((event) => event.type === 'summary')).toHaveLength(1);
    expect(models.chat.remaining()).toBe(0);
  });

  it('--keep-sandbox keeps the container and says how to enter it', async () => {
    const id = 'E2E-KEEP';
    models.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: decisionReply('abort', 'Stop here; the container is what we want to look at.') },
    );
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    const result = await runCliCaptured(['run', '--prd', 'PRD.md', '--task-id', id, '--keep-sandbox'], {
      cwd: repo.root,
      env: {
        ...process.env,
        OPENAI_BASE_URL: models.chat.url,
        OPENAI_API_KEY: KEY,
        CI: 'true',
      },
    });
    const kept = await docker.listContainers({
      filters: { label: [`agent-runner.task=${id}`, `agent-runner.repo=${realpathSync(repo.root)}`] },
    });
    onTestFinished(async () => {
      for (const container of kept) await docker.getContainer(container.Id).remove({ force: true });
    });
    expect(result.exitCode).toBe(1);
    expect(kept).toHaveLength(1);
    // Entered as the worker: the container's own user is the keeper's.
    const user = kept[0]?.Labels['agent-runner.user'];
    expect(user).toMatch(/^\d+:\d+$/);
    expect(result.stderr).toContain(`docker exec -it -u ${user} ${kept[0]?.Id}`);
  });
});
