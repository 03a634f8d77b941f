/**
 * Bad inputs: a PRD that is missing, empty, binary or over the limit; a directory that is not a git
 * repository; a repository with no commits; a detached HEAD. Each is one clear message with the fix and a
 * documented exit code, and nothing of the user's is changed (no branch, no .agent-runner directory).
 */
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { MAX_PRD_BYTES } from '../../src/prd/load-prd.js';
import { runCliCaptured } from '../support/cli.js';
import { labelledContainers, readNote } from '../support/faults-harness.js';
import { decisionReply, planReply } from '../support/meta-replies.js';
import { startScriptedChatServer } from '../support/scripted-chat-server.js';
import { createNodeRepo, git } from '../support/task-repo.js';

function repository() {
  const repo = createNodeRepo();
  onTestFinished(repo.remove);
  return repo.root;
}

function expectNothingCreated(root: string): void {
  expect(existsSync(path.join(root, '.agent-runner'))).toBe(false);
  expect(git(root, 'branch', '--list', 'agent-runner/*')).toBe('');
  expect(git(root, 'status', '--porcelain')).toBe('');
}

const env = { ...process.env, OPENAI_API_KEY: 'sk-test', CI: 'true' };

describe('bad PRDs (exit 2)', () => {
  it.each<[string, (file: string) => void, RegExp]>([
    ['missing', () => undefined, /does not exist\. Pass an existing Markdown file/],
    ['empty', (file) => writeFileSync(file, '  \n\n'), /is empty\. Write what the task should achieve/],
    ['binary', (file) => writeFileSync(file, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2])), /looks binary/],
    [
      'huge',
      (file) => writeFileSync(file, `# Big\n${'x'.repeat(MAX_PRD_BYTES + 10)}`),
      /the limit is 256 KiB\. Split it into smaller tasks/,
    ],
  ])('%s', async (_name, make, message) => {
    const root = repository();
    // Outside the repository, so the user's tree stays clean whatever the PRD is.
    const directory = mkdtempSync(path.join(tmpdir(), 'ar-faults-prd-'));
    onTestFinished(() => rmSync(directory, { recursive: true, force: true }));
    const prd = path.join(directory, 'spec.md');
    make(prd);
    const result = await runCliCaptured(['run', '--prd', prd, '--task-id', 'FAULT-PRD'], { cwd: root, env });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expectNothingCreated(root);
  });
});

describe('bad repository states (exit 2)', () => {
  it('not a git repository', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'ar-faults-nogit-'));
    onTestFinished(() => rmSync(directory, { recursive: true, force: true }));
    writeFileSync(path.join(directory, 'PRD.md'), '# Task\n\nDo it.\n');
    const result = await runCliCaptured(['run', '--prd', 'PRD.md'], { cwd: directory, env });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/is not inside a git repository\. .*git init/);
    expect(existsSync(path.join(directory, '.agent-runner'))).toBe(false);
  });

  it('a repository with no commits', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'ar-faults-nocommit-'));
    onTestFinished(() => rmSync(directory, { recursive: true, force: true }));
    git(directory, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(directory, 'PRD.md'), '# Task\n\nDo it.\n');
    const result = await runCliCaptured(['run', '--prd', 'PRD.md'], { cwd: directory, env });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/has no commits yet.*Make a first commit/);
    expect(existsSync(path.join(directory, '.agent-runner'))).toBe(false);
  });

  it('resume of a task that does not exist', async () => {
    const root = repository();
    const result = await runCliCaptured(['resume', 'NO-SUCH-TASK'], { cwd: root, env });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/Task NO-SUCH-TASK has no journal .*`agent-runner status`/);
  });

  it('a detached HEAD is a valid base: the task runs on its own branch and HEAD stays detached', async () => {
    const id = 'FAULT-DETACHED';
    const root = repository();
    onTestFinished(async () => expect(await labelledContainers(id, root)).toEqual([]));
    const head = git(root, 'rev-parse', 'HEAD');
    git(root, 'checkout', '-q', '--detach', 'HEAD');
    const chat = await startScriptedChatServer([
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: decisionReply('abort', 'Stopping here on purpose.') },
    ]);
    onTestFinished(() => chat.close());
    const result = await runCliCaptured(['run', '--prd', 'PRD.md', '--task-id', id], {
      cwd: root,
      env: { ...env, OPENAI_BASE_URL: chat.url, AGENT_RUNNER_NETWORK: 'open' },
    });
    expect(result.exitCode, result.stderr).toBe(1);
    expect(readNote(root, id)).toContain('the Meta-agent aborted: Stopping here on purpose.');
    expect(git(root, 'rev-parse', `agent-runner/${id}`)).toBe(head);
    expect(git(root, 'rev-parse', 'HEAD')).toBe(head);
    expect(git(root, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('HEAD');
  });
});
