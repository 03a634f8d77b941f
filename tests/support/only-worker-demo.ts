/**
 * The demo with one worker beside codex as the only one (AGENT_RUNNER_WORKER), as a user with only that
 * worker's key runs it (tests/e2e/only-worker-openai-responses.test.ts; the other workers and APIs run it
 * inside tests/security/redaction-workers-*.test.ts, recorded and replayed too).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, onTestFinished } from 'vitest';
import { runCliCaptured } from './cli.js';
import { ROOT, demoRepo, jsonEvents } from './demo-task.js';
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
