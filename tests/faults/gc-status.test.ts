/**
 * `gc` on finished tasks: a worktree goes only when nothing would be lost; `--force` removes it anyway; the
 * task branch always stays. `status` lists finished tasks.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { LOCAL_BASE_IMAGE as BASE_IMAGE } from '../../src/sandbox/image-builder.js';
import { runCliCaptured } from '../support/cli.js';
import { labelledContainers } from '../support/faults-harness.js';
import { decisionReply, planReply } from '../support/meta-replies.js';
import { startScriptedChatServer } from '../support/scripted-chat-server.js';
import { createNodeRepo, git } from '../support/task-repo.js';

async function finishedTask(root: string, id: string): Promise<void> {
  const chat = await startScriptedChatServer([
    { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
    { reply: decisionReply('abort', 'Nothing to do.') },
  ]);
  onTestFinished(() => chat.close());
  const result = await runCliCaptured(['run', '--prd', 'PRD.md', '--task-id', id], {
    cwd: root,
    env: {
      ...process.env,
      OPENAI_BASE_URL: chat.url,
      OPENAI_API_KEY: 'sk-test',
      CI: 'true',
      AGENT_RUNNER_NETWORK: 'open',
    },
  });
  expect(result.exitCode, result.stderr).toBe(1);
  expect(await labelledContainers(id, root)).toEqual([]);
}

describe('gc and status', () => {
  it('removes a clean finished worktree, keeps one with unsaved work until --force, never the branch', async () => {
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    const root = repo.root;
    await finishedTask(root, 'GC-CLEAN');
    await finishedTask(root, 'GC-DIRTY');
    const dirtyWorktree = path.join(root, '.agent-runner', 'worktrees', 'GC-DIRTY');
    writeFileSync(path.join(dirtyWorktree, 'my-edit.txt'), 'a person edited here\n');

    const status = await runCliCaptured(['status'], { cwd: root, env: process.env });
    expect(status.stdout).toMatch(/GC-CLEAN\s+finished\s+FAILED/);
    expect(status.stdout).toMatch(/GC-DIRTY\s+finished\s+FAILED/);

    const dry = await runCliCaptured(['gc', '--dry-run'], { cwd: root, env: process.env });
    expect(dry.stdout).toContain('would remove the worktree and sandbox of GC-CLEAN');
    expect(existsSync(path.join(root, '.agent-runner', 'worktrees', 'GC-CLEAN'))).toBe(true);

    // Another repository's container that happens to carry the same task id (a second clone, a suite's fixed
    // ids) neither keeps this task's sandbox nor is touched by this repository's gc.
    const otherRepo = mkdtempSync(path.join(tmpdir(), 'ar-other-repo-'));
    onTestFinished(() => rmSync(otherRepo, { recursive: true, force: true }));
    const stranger = execFileSync(
      'docker',
      [
        'create',
        '--label',
        'agent-runner.task=GC-CLEAN',
        '--label',
        `agent-runner.repo=${otherRepo}`,
        BASE_IMAGE,
        'true',
      ],
      { encoding: 'utf8' },
    ).trim();
    onTestFinished(() => void execFileSync('docker', ['rm', '-f', stranger], { stdio: 'ignore' }));

    const gc = await runCliCaptured(['gc'], { cwd: root, env: process.env });
    expect(gc.exitCode, gc.stderr).toBe(0);
    expect(gc.stdout).toContain(
      'removed the worktree and sandbox of GC-CLEAN (FAILED); branch agent-runner/GC-CLEAN kept',
    );
    expect(gc.stdout).toContain('kept GC-DIRTY: 1 uncommitted change(s)');
    expect(existsSync(path.join(root, '.agent-runner', 'worktrees', 'GC-CLEAN'))).toBe(false);
    expect(existsSync(path.join(root, '.agent-runner', 'sandboxes', 'GC-CLEAN'))).toBe(false);
    expect(existsSync(path.join(dirtyWorktree, 'my-edit.txt'))).toBe(true);
    expect(
      execFileSync('docker', ['inspect', '--format', '{{.Id}}', stranger], { encoding: 'utf8' }).trim(),
    ).toBe(stranger);

    const forced = await runCliCaptured(['gc', '--force'], { cwd: root, env: process.env });
    expect(forced.exitCode).toBe(0);
    expect(existsSync(dirtyWorktree)).toBe(false);
    // Branches are never deleted.
    expect(git(root, 'branch', '--list', 'agent-runner/*', '--format=%(refname:short)').split('\n')).toEqual([
      'agent-runner/GC-CLEAN',
      'agent-runner/GC-DIRTY',
    ]);
    expect(git(root, 'status', '--porcelain', '--', '.', ':(exclude).agent-runner')).toBe('');
  });
});
