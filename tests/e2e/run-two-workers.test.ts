/**
 * A task whose Meta-agent uses two workers: codex implements (and leaves a test failing), Claude Code fixes
 * what the checks found. Real CLI, real git, real Docker, the real codex and claude binaries in one sandbox;
 * the models are scripted by agent-runner's own `--model-script` server, which speaks each worker's protocol
 * (Responses for codex, Anthropic Messages for claude, the Gemini API for gemini) behind the gateway. And the
 * demo as a user with only an Anthropic (or only a Gemini) key runs it: claude (or gemini) as the only worker,
 * its image built on demand.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCliCaptured } from '../support/cli.js';
import {
  ROOT,
  SLUG_BROKEN,
  SLUG_FIXED,
  SLUG_TEST,
  assessment,
  npmTestPlan,
  demoRepo,
  heredoc,
  jsonEvents,
  nextAction,
} from '../support/demo-task.js';
import { git } from '../support/task-repo.js';
import { taskContainers } from '../support/task-containers.js';

function script(taskId: string): string {
  const meta = [
    npmTestPlan(taskId),
    nextAction('codex', 'Implement slugify with its tests.', 'Create slug.js and slug.test.js; commit them.'),
    assessment(false, 'The separators test fails.'),
    nextAction(
      'claude',
      'The checks found a failing test; let claude fix it.',
      'Make npm test pass; commit.',
    ),
    assessment(true, 'npm test passes on the committed tree.'),
  ];
  const worker = [
    { run: `${heredoc('slug.js', SLUG_BROKEN)}\n${heredoc('slug.test.js', SLUG_TEST)}` },
    { run: "git add -A && git -c user.name=codex -c user.email=c@e commit -q -m 'Add slugify'" },
    { message: 'Added slugify and its tests.' },
    { run: 'npm test 2>&1 | tail -n 3' },
    {
      run: `${heredoc('slug.js', SLUG_FIXED)}\ngit add slug.js && git -c user.name=claude -c user.email=c@e commit -q -m 'Fix separators'`,
    },
    { message: 'Fixed the separators; npm test passes.' },
  ];
  return JSON.stringify({ meta, worker });
}

async function noContainerLeft(taskId: string, repoRoot: string): Promise<void> {
  expect(await taskContainers(taskId, repoRoot)).toEqual([]);
}

describe('a task with two workers', () => {
  it('codex implements, claude fixes what the checks found, and the task ends COMPLETE with the DoD passed', async () => {
    const taskId = 'TWO-WORKERS';
    const repo = demoRepo('workers:\n  claude:\n    model: claude-scripted\n');
    const scriptFile = path.join(repo, '..', `${path.basename(repo)}-script.json`);
    writeFileSync(scriptFile, script(taskId));
    onTestFinished(() => rmSync(scriptFile, { force: true }));
    onTestFinished(() => noContainerLeft(taskId, repo));
    const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
    delete env.OPENAI_API_KEY;
    delete env.ANTHROPIC_API_KEY;
    const result = await runCliCaptured(
      [
        'run',
        '--prd',
        path.join(ROOT, 'examples', 'slugify', 'PRD.md'),
        '--task-id',
        taskId,
        '--single',
        '--json',
        '--model-script',
        scriptFile,
      ],
      { cwd: repo, env },
    );
    const events = jsonEvents(result.stdout);
    const summary = events.at(-1) as unknown as { state: string; exitCode: number; notePath: string };
    expect(summary.state, result.stderr).toBe('COMPLETE');
    expect(result.exitCode).toBe(0);

    const started = events.filter((event) => event.type === 'worker_started');
    expect(started.map((event) => [event.worker, event.model])).toEqual([
      ['codex', 'gpt-5.5'],
      ['claude', 'claude-scripted'],
    ]);
    const finished = events.filter((event) => event.type === 'worker_finished');
    expect(finished.map((event) => event.worker)).toEqual(['codex', 'claude']);
    for (const event of finished)
      expect((event.usage as { inputTokens: number }).inputTokens).toBeGreaterThan(0);
    // The DoD failed after codex's run and passed after claude's, on the tree the task ends with.
    const dods = events
      .filter((event) => event.type === 'dod')
      .map((event) => (event.dod as { status: string }).status);
    expect(dods).toEqual(['failed', 'passed']);
    expect(
      git(repo, 'log', '--format=%s', 'agent-runner/TWO-WORKERS').trim().split('\n').slice(0, 2),
    ).toEqual(['Fix separators', 'Add slugify']);

    const note = readFileSync(summary.notePath, 'utf8');
    expect(note).toMatch(
      /\| Worker \| codex \(gpt-5\.5\); the Meta-agent could also choose claude \(claude-scripted\) \|/,
    );
    expect(note).toMatch(/### Run 1 \(codex exec with gpt-5\.5, [^)]*exit 0, \d+ tokens\)/);
    expect(note).toMatch(/### Run 2 \(claude exec with claude-scripted, [^)]*exit 0, \d+ tokens\)/);
    expect(note).toMatch(/\*\*State\*\* \| \*\*COMPLETE\*\*/);
  }, 300_000);

  it.each([
    ['claude', 'claude-sonnet-4-5', 'anthropic'],
    ['gemini', 'gemini-2.5-pro', 'gemini'],
    ['qwen', 'gpt-5.5', 'responses'],
    ['opencode', 'gpt-5.5', 'responses'],
    // Over Chat Completions, the API every OpenAI-compatible endpoint serves.
    ['qwen', 'gpt-5.5', 'chat'],
    ['opencode', 'gpt-5.5', 'chat'],
  ])(
    'the demo with %s (%s over %s) as the only worker (AGENT_RUNNER_WORKER) ends COMPLETE',
    async (worker, model, api) => {
      const taskId = `DEMO-${worker.toUpperCase()}-${api.toUpperCase()}`;
      const repo = demoRepo(api === 'chat' ? `workers:\n  ${worker}:\n    api: chat\n` : '');
      onTestFinished(() => noContainerLeft(taskId, repo));
      const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true', AGENT_RUNNER_WORKER: worker };
      delete env.OPENAI_API_KEY;
      const result = await runCliCaptured(
        [
          'run',
          '--prd',
          path.join(ROOT, 'examples', 'slugify', 'PRD.md'),
          '--task-id',
          taskId,
          '--json',
          '--model-script',
          path.join(ROOT, 'examples', 'slugify', 'model-script.yaml'),
        ],
        { cwd: repo, env },
      );
      const events = jsonEvents(result.stdout);
      const summary = events.at(-1) as unknown as { state: string; notePath: string };
      expect(summary.state, result.stderr).toBe('COMPLETE');
      expect(events.filter((event) => event.type === 'worker_started').map((event) => event.worker)).toEqual([
        worker,
      ]);
      const note = readFileSync(summary.notePath, 'utf8');
      expect(note).toContain(`| Worker | ${worker} (${model}) |`);
      expect(note).toMatch(/Definition of Done: 1\/1 check\(s\) passed/);
    },
    300_000,
  );

  it.each(['claude', 'gemini'])(
    'a %s run is recorded and replayed with no upstream: COMPLETE again, the same work',
    async (worker) => {
      const taskId = `REPLAY-${worker.toUpperCase()}`;
      const cassette = path.join(mkdtempSync(path.join(tmpdir(), 'ar-cassette-')), 'run.json');
      onTestFinished(() => rmSync(path.dirname(cassette), { recursive: true, force: true }));
      const prd = path.join(ROOT, 'examples', 'slugify', 'PRD.md');
      const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true', AGENT_RUNNER_WORKER: worker };
      delete env.OPENAI_API_KEY;
      const recordRepo = demoRepo('');
      onTestFinished(() => noContainerLeft(taskId, recordRepo));
      const recorded = await runCliCaptured(
        [
          'run',
          '--prd',
          prd,
          '--task-id',
          taskId,
          '--json',
          '--record',
          cassette,
          '--model-script',
          path.join(ROOT, 'examples', 'slugify', 'model-script.yaml'),
        ],
        { cwd: recordRepo, env },
      );
      expect(recorded.exitCode, recorded.stderr).toBe(0);
      // The replay has no model at all: a closed endpoint, no key; every answer comes from the cassette.
      const replayRepo = demoRepo('');
      onTestFinished(() => noContainerLeft(taskId, replayRepo));
      const replayed = await runCliCaptured(
        ['run', '--prd', prd, '--task-id', taskId, '--json', '--replay', cassette],
        {
          cwd: replayRepo,
          env: {
            ...env,
            OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
            ANTHROPIC_API_KEY: '',
            GEMINI_API_KEY: '',
          },
        },
      );
      const summary = jsonEvents(replayed.stdout).at(-1) as unknown as { state: string };
      expect(summary.state, replayed.stderr).toBe('COMPLETE');
      const slug = (repo: string) => git(repo, 'show', `agent-runner/${taskId}:slug.js`);
      expect(slug(replayRepo)).toBe(slug(recordRepo));
    },
  );

  it('a configured worker without its key stops the run before anything starts (exit 2, nothing created)', async () => {
    const repo = demoRepo('workers:\n  claude: {}\n');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      CI: 'true',
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    };
    delete env.ANTHROPIC_API_KEY;
    const before = git(repo, 'for-each-ref').trim();
    const result = await runCliCaptured(
      ['run', '--prd', path.join(ROOT, 'examples', 'slugify', 'PRD.md'), '--task-id', 'NO-KEY'],
      { cwd: repo, env },
    );
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(
      'The claude worker has no key: ANTHROPIC_API_KEY is not set (https://api.anthropic.com needs one). Export ANTHROPIC_API_KEY=<your key>, or set workers.claude.apiKeyEnv to the variable that holds it.',
    );
    expect(git(repo, 'for-each-ref').trim()).toBe(before);
    await noContainerLeft('NO-KEY', repo);
  }, 120_000);
});
