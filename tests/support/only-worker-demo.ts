/**
 * The demo with one worker beside codex as the only one (AGENT_RUNNER_WORKER), as a user with only that
 * worker's key runs it, and the same recorded and replayed with no upstream: the bodies of
 * tests/e2e/only-worker-*.test.ts (split by worker so they run side by side).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, onTestFinished } from 'vitest';
import { runCliCaptured } from './cli.js';
import { ROOT, demoRepo, jsonEvents } from './demo-task.js';
import { git } from './task-repo.js';
import { taskContainers } from './task-containers.js';

/** Fails the test when a container of this task and repository is left. */
export async function noContainerLeft(taskId: string, repoRoot: string): Promise<void> {
  expect(await taskContainers(taskId, repoRoot)).toEqual([]);
}

/** The demo with `worker` (its `model` over `api`) as the only worker ends COMPLETE. */
export async function demoWithOnlyWorker(worker: string, model: string, api: string): Promise<void> {
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
}

/** A run of the demo with `worker` alone, recorded, then replayed with no model at all: the same work. */
export async function recordAndReplayWorker(worker: string): Promise<void> {
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
}
