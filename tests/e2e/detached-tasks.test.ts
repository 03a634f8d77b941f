/**
 * Tasks that run detached, from the CLI: `run --detach` returns each task's id at once (the first one starts
 * the repository's server, detached, as a process of its own), `wait` waits for three tasks with different
 * outcomes and exits with the highest code, `logs` prints a task's progress, `answer` answers a question a
 * detached task asks. Real CLI, real server process, real Docker and codex, agent-runner's scripted model.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { readServeInfo, ServeClient } from '../../src/serve/api-client.js';
import { runCliCaptured } from '../support/cli.js';
import { DEMO_PRD, ROOT, createDemoRepo } from '../support/demo-task.js';

const DEMO_SCRIPT = path.join(ROOT, 'examples', 'slugify', 'model-script.yaml');
const { dir: repo, remove } = createDemoRepo('');
const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
delete env.OPENAI_API_KEY;

const running = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

afterAll(async () => {
  // The server started on demand stops on SIGTERM (as it does when idle), leaving no process behind.
  const info = await readServeInfo(repo);
  if (info !== null) process.kill(info.pid, 'SIGTERM');
  for (let waited = 0; waited < 100 && info !== null && running(info.pid); waited += 1)
    await new Promise((resolve) => setTimeout(resolve, 100));
  remove();
  expect(info).not.toBeNull();
  expect(running(info?.pid ?? 0)).toBe(false);
});

/** The demo's script with its Meta-agent replies changed by `edit`, written next to the repository. */
function script(name: string, edit: (meta: string[]) => string[]): string {
  const demo = parse(readFileSync(DEMO_SCRIPT, 'utf8')) as { meta: string[]; worker: unknown[] };
  const file = `${repo}-${name}.yaml`;
  writeFileSync(file, stringify({ ...demo, meta: edit(demo.meta) }));
  return file;
}

const decision = (action: string, reason: string, extra: string[] = []) =>
  [
    'type: next_action',
    'version: 1',
    'payload:',
    '  decision:',
    `    action: ${action}`,
    `    reason: ${reason}`,
    '  used_patterns: []',
    ...extra,
  ].join('\n');

async function detach(taskId: string, modelScript: string) {
  const result = await runCliCaptured(
    ['run', '--detach', '--prd', DEMO_PRD, '--task-id', taskId, '--model-script', modelScript],
    { cwd: repo, env },
  );
  expect(result.exitCode, result.stderr).toBe(0);
  return result;
}

describe('detached tasks from the CLI', () => {
  it('run --detach returns at once; wait gives each summary and the highest exit code; logs prints the progress', async () => {
    const started = Date.now();
    const complete = await detach('DETACH-OK', DEMO_SCRIPT);
    expect(complete.stdout.trim()).toBe('DETACH-OK');
    expect(complete.stderr).toContain('started a server for this repository');
    // The Meta-agent gives up after planning: the task ends without the work.
    await detach(
      'DETACH-ABORT',
      script('abort', (meta) => [meta[0] as string, decision('abort', 'Nothing can be done.')]),
    );
    // The script has no reply after the plan: the model fails the task.
    await detach(
      'DETACH-MODEL',
      script('short', (meta) => [meta[0] as string]),
    );
    expect(Date.now() - started).toBeLessThan(60_000);

    const waited = await runCliCaptured(['wait', 'DETACH-OK', 'DETACH-ABORT', 'DETACH-MODEL', '--json'], {
      cwd: repo,
      env,
    });
    const summaries = waited.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { taskId: string; state: string; exitCode: number });
    expect(summaries.map((summary) => summary.taskId)).toEqual(['DETACH-OK', 'DETACH-ABORT', 'DETACH-MODEL']);
    const codes = summaries.map((summary) => summary.exitCode);
    expect(summaries[0]).toMatchObject({ state: 'COMPLETE', exitCode: 0 });
    expect(new Set(codes).size).toBe(3);
    expect(waited.exitCode, waited.stderr).toBe(Math.max(...codes));

    const logs = await runCliCaptured(['logs', 'DETACH-OK'], { cwd: repo, env });
    expect(logs.exitCode, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('COMPLETE');
    expect(logs.stdout).toMatch(/codex/);
  }, 300_000);

  it('answer answers the question of a detached task, which goes on to COMPLETE', async () => {
    const question = 'Should slugify keep digits?';
    await detach(
      'DETACH-ASK',
      script('ask', (meta) => [
        meta[0] as string,
        decision('ask_human', 'The PRD does not say.', [`  question: ${question}`]),
        ...meta.slice(1),
      ]),
    );
    const info = await readServeInfo(repo);
    const client = new ServeClient(info?.url ?? '', info?.token ?? '');
    for (let tries = 0; tries < 600; tries += 1) {
      const task = await client.request<{ question: string | null }>('GET', '/api/tasks/DETACH-ASK');
      if (task.question !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const answered = await runCliCaptured(['answer', 'DETACH-ASK', 'Yes, keep digits.'], { cwd: repo, env });
    expect(answered.exitCode, answered.stderr).toBe(0);
    const waited = await runCliCaptured(['wait', 'DETACH-ASK'], { cwd: repo, env });
    expect(waited.exitCode, waited.stdout).toBe(0);
    expect(waited.stdout).toContain('COMPLETE');
    // Nothing waits for an answer any more: a second one is refused with the reason.
    const again = await runCliCaptured(['answer', 'DETACH-ASK', 'again'], { cwd: repo, env });
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toContain('has no question waiting');
  }, 300_000);
});
