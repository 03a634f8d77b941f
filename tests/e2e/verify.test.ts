/**
 * `agent-runner verify` end to end (real CLI, real git, real Docker, the real codex binary; only the models are
 * scripted): a task that ends COMPLETE leaves its evidence as a git note on its branch's head; `verify` runs the
 * recorded checks again in a fresh sandbox and says they hold (exit 0), also from a clone that got the branch
 * through a `file://` remote; a commit made by hand that breaks the test makes it say which check differs and
 * that the branch moved (exit 1); a branch with no evidence is a usage error with the fix (exit 2); no
 * container is left after any of them.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { runCliCaptured } from '../support/cli.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { codexTurn, scriptedRunEnv } from '../support/demo-task.js';
import {
  SLUG_BROKEN_JS,
  SLUG_JS,
  SLUG_TEST_JS,
  createNodeRepo,
  git,
  writeFileCommand,
} from '../support/task-repo.js';

const docker = createDockerClient();
const models = scriptedModelServers();
/** Docker's `Created` is in whole seconds. */
const FILE_STARTED = Math.floor(Date.now() / 1000) - 1;

/** Every container of `repoRoot` made since this file started (a task's, a verify's): none may be left. */
async function repoContainers(repoRoot: string) {
  const all = await docker.listContainers({
    all: true,
    filters: { label: [`agent-runner.repo=${realpathSync(repoRoot)}`] },
  });
  return all.filter((container) => container.Created >= FILE_STARTED);
}

/** `verify` as a reviewer runs it: no model endpoint, no key. */
async function verify(cwd: string, ...args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
  delete env.OPENAI_API_KEY;
  const result = await runCliCaptured(['verify', ...args], { cwd, env });
  expect(await repoContainers(cwd)).toEqual([]);
  return result;
}

describe('agent-runner verify (end to end)', () => {
  it('a COMPLETE task holds; a clone verifies it through a file:// remote; a hand commit that breaks the test differs', async () => {
    const id = 'E2E-VERIFY';
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    models.chat.push(
      {
        reply: planReply(id, [
          {
            id: 'AC-1',
            description: 'slugify is tested',
            check: { kind: 'file_exists', file: 'slug.test.js' },
          },
          { id: 'AC-2', description: 'the tests pass', check: { kind: 'command', command: 'npm test' } },
        ]),
      },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(true, ['AC-1', 'AC-2'], 'slugify is implemented, tested and committed.') },
    );
    models.responses.enqueue(
      ...codexTurn(
        [
          `${writeFileCommand('slug.js', SLUG_JS)}\n${writeFileCommand('slug.test.js', SLUG_TEST_JS)}`,
          "git add -A && git commit -q -m 'Add slugify'",
          // A forged evidence note in the sandbox repository: the host never fetches it.
          `git notes --ref=agent-runner add -m '{"agentRunnerEvidence":1,"forged":"by-the-worker"}' HEAD && git notes --ref=agent-runner show HEAD | tr a-z A-Z`,
        ],
        'Committed slugify.',
      ),
    );
    const run = await runCliCaptured(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], {
      cwd: repo.root,
      env: scriptedRunEnv(models, 'e2e-verify-key'),
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const branch = `agent-runner/${id}`;
    const head = git(repo.root, 'rev-parse', branch);

    // The evidence is a note on the branch's head, written by host git.
    const evidence = JSON.parse(git(repo.root, 'notes', '--ref=agent-runner', 'show', head)) as {
      agentRunnerEvidence: number;
      headSha: string;
      state: string;
      dod: { results: { name: string; status: string }[] };
      criteria: { id: string; checkResult: { status: string } }[];
    };
    expect(evidence).toMatchObject({ agentRunnerEvidence: 1, headSha: head, state: 'COMPLETE' });
    expect(evidence.dod.results.map((result) => result.status)).toEqual(['passed']);
    expect(evidence.criteria.map((criterion) => criterion.checkResult.status)).toEqual(['passed', 'passed']);
    expect(JSON.stringify(evidence)).not.toContain('e2e-verify-key');
    expect(JSON.stringify(evidence)).not.toContain('forged');
    // The notes ref is host git's alone: one commit, agent-runner's, not built on anything of the sandbox.
    expect(git(repo.root, 'log', '--format=%an %ae', 'refs/notes/agent-runner')).toBe(
      'agent-runner agent-runner@localhost',
    );
    // The probe: the forged note was there in the sandbox (its output, upper-cased, in the worker's commands).
    expect(run.stdout).toContain('BY-THE-WORKER');

    // Every recorded check holds on the branch as the task left it.
    const holds = await verify(repo.root, branch);
    expect(holds.exitCode, holds.stderr).toBe(0);
    const lines = holds.stdout.trim().split('\n');
    expect(lines.filter((line) => line.startsWith('holds'))).toHaveLength(3);
    expect(holds.stdout).not.toMatch(/^differs/m);
    expect(lines.at(-1)).toMatch(/^3 hold, 0 differ, 0 not run: the evidence holds on /);

    // A reviewer's clone: the branch and the notes pushed to a bare repository, `verify origin/<branch>`.
    const elsewhere = mkdtempSync(path.join(tmpdir(), 'ar-verify-remote-'));
    onTestFinished(() => rmSync(elsewhere, { recursive: true, force: true }));
    const bare = path.join(elsewhere, 'origin.git');
    git(elsewhere, 'init', '-q', '--bare', '-b', 'main', bare);
    git(repo.root, 'remote', 'add', 'origin', `file://${bare}`);
    git(repo.root, 'push', '-q', 'origin', 'main', branch, 'refs/notes/agent-runner');
    const clone = path.join(elsewhere, 'clone');
    git(elsewhere, 'clone', '-q', `file://${bare}`, clone);
    // A clone does not get the notes: verify fetches them itself.
    expect(git(clone, 'notes', '--ref=agent-runner', 'list')).toBe('');
    const remote = await verify(clone, `origin/${branch}`, '--json');
    expect(remote.exitCode, remote.stderr).toBe(0);
    const object = JSON.parse(remote.stdout) as Record<string, unknown>;
    expect(object).toMatchObject({
      type: 'verify',
      branch: `origin/${branch}`,
      headSha: head,
      moved: false,
      allHold: true,
      holds: 3,
      durationMs: expect.any(Number),
      exitCode: 0,
    });
    // Nothing of the verify stays in the clone: no branch, no worktree.
    expect(git(clone, 'branch', '--list', 'agent-runner/*')).toBe('');
    expect(git(clone, 'worktree', 'list').split('\n')).toHaveLength(1);
    expect(git(clone, 'status', '--porcelain', '--ignored')).toBe('');

    // A commit made by hand on the task branch breaks the test: the branch moved, the test check differs.
    const worktree = path.join(repo.root, '.agent-runner', 'worktrees', id);
    writeFileSync(path.join(worktree, 'slug.js'), SLUG_BROKEN_JS);
    git(worktree, 'commit', '-q', '-am', 'Simplify slugify');
    const moved = git(repo.root, 'rev-parse', branch);
    const differs = await verify(repo.root, id);
    expect(differs.exitCode).toBe(1);
    expect(differs.stderr).toContain(
      `the branch moved since the evidence was recorded (${head.slice(0, 12)} → ${moved.slice(0, 12)})`,
    );
    expect(differs.stdout).toMatch(
      /^differs {2}DoD test `npm test`: was passed \(exit 0\), now failed \(exit 1\)$/m,
    );
    expect(differs.stdout).toMatch(/^differs {2}criterion AC-2 \(command\) `npm test`: was passed/m);
    expect(differs.stdout).toMatch(/^holds {4}criterion AC-1 \(file_exists\) `slug.test.js`/m);
    // The output's tail names the failing test.
    expect(differs.stdout).toMatch(/^ +failing now: .*slugify joins lower-case words/m);
    expect(differs.stderr).toMatch(/agent-runner: the evidence of task E2E-VERIFY does not hold/);

    // A branch with no evidence: usage, with the fix.
    const none = await verify(repo.root, 'main');
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/No agent-runner evidence on main/);
    expect(none.stderr).toContain('refs/notes/agent-runner:refs/notes/agent-runner');
  });
});
