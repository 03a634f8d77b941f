import { existsSync, readdirSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listTasks } from '../../src/lifecycle/task-inventory.js';
import { runCliCaptured } from '../support/cli.js';
import { createTempRepo } from '../support/git-repo.js';
import { startScriptedChatServer, type ScriptedChatServer } from '../support/scripted-chat-server.js';

const servers: ScriptedChatServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** Sets every file of a directory tree back in time, as a plan run long ago would have left it. */
function age(directory: string, seconds: number): void {
  const then = Date.now() / 1000 - seconds;
  for (const entry of readdirSync(directory, { withFileTypes: true, recursive: true }))
    utimesSync(path.join(entry.parentPath, entry.name), then, then);
  utimesSync(directory, then, then);
}

describe('a task that never started (a failed plan)', () => {
  it('status shows it as never started with its error; gc removes it once quiet, --force at once', async () => {
    const repo = await createTempRepo({ 'README.md': '# r\n' }, { prefix: 'ar-evidence-ns-' });
    await repo.write('prd.md', '# Add a health endpoint\n\nGET /health answers 200.\n');
    const server = await startScriptedChatServer([
      { reply: 'I cannot do that.' },
      { reply: 'still prose' },
      { reply: 'type: plan_task\nversion: 3\n' },
    ]);
    servers.push(server);
    const env = {
      OPENAI_BASE_URL: server.url,
      OPENAI_API_KEY: 'test-key',
      DOCKER_HOST: 'unix:///nonexistent.sock',
    };
    const planned = await runCliCaptured(['plan', '--prd', 'prd.md'], { cwd: repo.root, env });
    expect(planned.exitCode).toBe(5);
    const runDir = path.join(repo.root, '.agent-runner', 'runs', 'PRD');
    // The attack-free fault really happened: the plan's logs are there and no task started.
    expect(readdirSync(path.join(runDir, 'meta')).length).toBeGreaterThan(0);

    const { tasks } = await listTasks(repo.root);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({ taskId: 'PRD', status: 'never_started' });
    expect(tasks[0]?.reason).toMatch(
      /^never started: `plan` failed: The Meta-agent.s `plan_task` reply was still invalid/,
    );

    const status = await runCliCaptured(['status'], { cwd: repo.root, env });
    expect(status.stdout).toMatch(/^PRD\s+never started\s+-\s+-\s+never started: `plan` failed: /m);
    expect(status.stdout).not.toMatch(/PRD\s+unknown/);
    expect(status.stdout).toContain('`agent-runner gc` removes their run directories');

    // A recent directory may be a plan still writing: gc leaves it and says why.
    const recent = await runCliCaptured(['gc'], { cwd: repo.root, env });
    expect(recent.stdout).toContain('kept PRD (never started): changed in the last 15 minutes');
    expect(existsSync(runDir)).toBe(true);

    age(runDir, 3600);
    const dry = await runCliCaptured(['gc', '--dry-run'], { cwd: repo.root, env });
    expect(dry.stdout).toContain('would remove the run directory of PRD (never started)');
    expect(existsSync(runDir)).toBe(true);
    const swept = await runCliCaptured(['gc'], { cwd: repo.root, env });
    expect(swept.stdout).toContain('removed the run directory of PRD (never started)');
    expect(existsSync(runDir)).toBe(false);
    expect((await runCliCaptured(['status'], { cwd: repo.root, env })).stdout).toContain(
      'No tasks in this repository.',
    );
  });

  it('a successful plan is listed as never started too, and gc --force removes it at once', async () => {
    const repo = await createTempRepo({ 'README.md': '# r\n' }, { prefix: 'ar-evidence-ns-' });
    await repo.write('prd.md', '# Add a health endpoint\n\nGET /health answers 200.\n');
    const plan = [
      'type: plan_task',
      'version: 1',
      'payload:',
      '  task_id: PRD',
      '  acceptance_criteria:',
      '    - id: AC-1',
      '      description: GET /health answers 200',
      '      type: functional',
      '      critical: true',
      '',
    ].join('\n');
    const server = await startScriptedChatServer([{ reply: plan }]);
    servers.push(server);
    const env = {
      OPENAI_BASE_URL: server.url,
      OPENAI_API_KEY: 'test-key',
      DOCKER_HOST: 'unix:///nonexistent.sock',
    };
    expect((await runCliCaptured(['plan', '--prd', 'prd.md'], { cwd: repo.root, env })).exitCode).toBe(0);
    const { tasks } = await listTasks(repo.root);
    expect(tasks[0]).toMatchObject({ status: 'never_started', reason: 'never started: only `plan` ran' });
    const swept = await runCliCaptured(['gc', '--force'], { cwd: repo.root, env });
    expect(swept.stdout).toContain('removed the run directory of PRD (never started)');
    expect(existsSync(path.join(repo.root, '.agent-runner', 'runs', 'PRD'))).toBe(false);
  });
});
