/**
 * Parallel work end to end (real CLI, git, Docker sandboxes and codex; scripted models matching each subtask's
 * task id): subtasks at once and in order, a fix-up, overlapping write scopes. Shared parts: tests/support/parallel-project.ts.
 */
import path from 'node:path';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it, onTestFinished } from 'vitest';
import { GitHttpRemote } from '../support/git-http-remote.js';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';
import { runCliCaptured } from '../support/cli.js';
import { decompositionReply } from '../support/meta-replies.js';
import { git, writeFileCommand } from '../support/task-repo.js';
import type { Event } from '../support/parallel-project.js';
import {
  projectRunner,
  codexTurn,
  subtaskMeta,
  writeAndCommit,
  hasFeature,
  featureSubtask,
  onlyFeatureTurns,
  fixupMeta,
  workerWindow,
  indexOf,
} from '../support/parallel-project.js';
import { scriptedModelServers } from '../support/scripted-models.js';

const models = scriptedModelServers();
const runProject = projectRunner(models);
const DELIVERY_TOKEN = 'ghp_e2eProjectDeliverToken0123456789abcdef';

/** An agent-runner.yaml outside the repository that sends delivery to the scripted GitHub server. */
function deliveryConfig(apiUrl: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-deliver-config-'));
  const file = path.join(dir, 'agent-runner.yaml');
  writeFileSync(file, `deliver:\n  forge: github\n  apiUrl: ${apiUrl}\n`);
  return file;
}

describe('agent-runner run: a PRD split into subtasks (end to end)', () => {
  it('runs two independent subtasks at once, the dependent one after both merged, and checks the combined tree', async () => {
    const id = 'par-three';
    models.chat.push(
      {
        reply: decompositionReply(id, [
          { id: 'alpha', title: 'Add alpha()', write: ['alpha.js', 'test/alpha.test.js'] },
          { id: 'beta', title: 'Add beta()', write: ['beta.js', 'test/beta.test.js'] },
          {
            id: 'gamma',
            title: 'Add both() from alpha and beta',
            write: ['both.js', 'test/both.test.js'],
            blockedBy: ['alpha', 'beta'],
          },
        ]),
      },
      ...subtaskMeta(`${id}--alpha`),
      ...subtaskMeta(`${id}--beta`),
      ...subtaskMeta(`${id}--gamma`),
    );
    const testOf = (name: string, expected: string) =>
      `const test = require('node:test');\nconst assert = require('node:assert');\ntest('${name}', () => assert.strictEqual(require('../${name}.js').${name}(), ${expected}));\n`;
    models.responses.enqueue(
      ...codexTurn(
        `${id}--alpha`,
        writeAndCommit(
          { 'alpha.js': "exports.alpha = () => 'a';\n", 'test/alpha.test.js': testOf('alpha', "'a'") },
          'Add alpha',
        ),
      ),
      ...codexTurn(
        `${id}--beta`,
        writeAndCommit(
          { 'beta.js': "exports.beta = () => 'b';\n", 'test/beta.test.js': testOf('beta', "'b'") },
          'Add beta',
        ),
      ),
      ...codexTurn(
        `${id}--gamma`,
        writeAndCommit(
          {
            'both.js': "exports.both = () => require('./alpha.js').alpha() + require('./beta.js').beta();\n",
            'test/both.test.js': testOf('both', "'ab'"),
          },
          'Add both',
        ),
      ),
    );
    const { repo, result, events, summary, journal } = await runProject(
      id,
      '# Letters\n\nAdd alpha() and beta(), then both() that joins them.\n',
      2,
    );
    expect(result.stderr).toBe('');
    expect(summary).toMatchObject({
      type: 'summary',
      state: 'COMPLETE',
      branch: `agent-runner/${id}`,
      exitCode: 0,
    });
    expect(result.exitCode).toBe(0);
    // The integration sandbox left nothing behind: no run folder, sandbox, branch or worktree.
    for (const dir of ['runs', 'sandboxes', 'worktrees'])
      expect(
        readdirSync(path.join(repo.root, '.agent-runner', dir)).filter((name) =>
          /--(check-|integration)/.test(name),
        ),
      ).toEqual([]);
    expect(git(repo.root, 'branch', '--list', `agent-runner/${id}--integration`)).toBe('');

    // alpha and beta worked at the same time; gamma waited for both to merge, then started.
    const [alphaStart, alphaEnd] = workerWindow(journal, 'alpha');
    const [betaStart, betaEnd] = workerWindow(journal, 'beta');
    expect(alphaStart).toBeLessThan(betaEnd);
    expect(betaStart).toBeLessThan(alphaEnd);
    expect(
      journal.some(
        (event) => event.type === 'subtask_waiting' && event.subtask === 'gamma' && event.kind === 'blocked',
      ),
    ).toBe(true);
    const gammaStarts = indexOf(
      journal,
      (event) => event.type === 'task_started' && event.subtask === 'gamma',
    );
    for (const blocker of ['alpha', 'beta'])
      expect(
        indexOf(
          journal,
          (event) => event.type === 'merge' && event.subtask === blocker && event.status === 'merged',
        ),
      ).toBeLessThan(gammaStarts);

    // Every merge (alpha and beta alone or as one candidate, then gamma) was followed by the DoD on the
    // combined tree, in a sandbox, and it passed.
    const combined = journal.filter((event) => event.type === 'combined_dod');
    expect(combined.map((event) => (event.dod as { status: string }).status)).toEqual(
      combined.map(() => 'passed'),
    );
    expect(combined.at(-1)?.subtask).toBe('gamma');
    // All in the one integration sandbox, brought to each head (no head changed what the set-up reads).
    expect(combined.map((event) => event.sandbox)).toEqual(combined.map(() => ({ reused: true })));
    expect(readFileSync(summary.notePath, 'utf8')).toContain(
      "Ran in the project's integration sandbox, brought to this head.",
    );
    expect(
      combined
        .map((event) => String(event.subtask).split(', '))
        .flat()
        .sort(),
    ).toEqual(['alpha', 'beta', 'gamma']);
    const integration = `agent-runner/${id}`;
    expect(git(repo.root, 'ls-tree', '--name-only', '-r', integration).split('\n')).toEqual(
      expect.arrayContaining(['alpha.js', 'beta.js', 'both.js', 'test/both.test.js']),
    );
    expect(git(repo.root, 'rev-parse', integration)).toBe(summary.headSha);
    // The person's checkout is untouched.
    expect(git(repo.root, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('main');
    expect(existsSync(path.join(repo.root, 'alpha.js'))).toBe(false);
    // The one task prepared while the planner answered was handed off: its sandbox repository is gone and the
    // record is the project's journal (no task journal under the project's id).
    expect(existsSync(path.join(repo.root, '.agent-runner', 'sandboxes', id))).toBe(false);
    expect(existsSync(path.join(repo.root, '.agent-runner', 'runs', id, 'events.jsonl'))).toBe(false);

    // --json: every subtask event carries its subtask id.
    const subtaskEvents = events.filter((event) => event.type === 'worker_started');
    expect(subtaskEvents.map((event) => event.subtask).sort()).toEqual(['alpha', 'beta', 'gamma']);

    // Each subtask's review was asked as soon as its checks passed, before its task ended (beside the
    // assessment), and it judged the commit the subtask ended on.
    for (const sub of ['alpha', 'beta', 'gamma']) {
      const asked = models.chat.requests.find((request) =>
        JSON.stringify(request.body.messages).includes(`Review subtask ${id}--${sub}.`),
      );
      const ended = journal.find((event) => event.type === 'subtask_finished' && event.subtask === sub) as
        (Event & { summary: { headSha: string } }) | undefined;
      expect(asked?.at).toBeLessThan(Date.parse(ended?.at ?? ''));
      const review = journal.find((event) => event.type === 'review' && event.subtask === sub);
      expect(review?.headSha).toBe(ended?.summary.headSha);
    }

    // The parent note: the plan table links each subtask's own note, which exists.
    const note = readFileSync(summary.notePath, 'utf8');
    for (const subtask of ['alpha', 'beta', 'gamma']) {
      expect(note).toMatch(
        new RegExp(`\\| \`${subtask}\` \\|.*\\| merged \\| 1 \\| \\[task-${id}--${subtask}\\.md\\]`),
      );
      expect(existsSync(path.join(repo.root, '.agent-runner', `task-${id}--${subtask}.md`))).toBe(true);
    }
    expect(note).toContain('## Merge log');
    expect(note).toContain('## Combined check');
    expect(note).toMatch(/`alpha` review 1: \*\*ok\*\*/);
    expect(models.chat.remaining()).toBe(0);
    models.responses.assertComplete();

    // Delivered: the integration branch pushed, one pull request with a section per subtask.
    const remote = await new GitHttpRemote({ user: 'x-access-token', password: DELIVERY_TOKEN }).start();
    onTestFinished(() => remote.stop());
    const github = await new ScriptedGitHubServer().start();
    onTestFinished(() => github.stop());
    await remote.createFrom('acme/app', repo.root);
    git(repo.root, 'remote', 'add', 'origin', remote.url('acme/app'));
    const deliverEnv = { ...process.env, GH_TOKEN: DELIVERY_TOKEN };
    const delivered = await runCliCaptured(
      ['deliver', id, '--pr', '--json', '--config', deliveryConfig(github.url)],
      { cwd: repo.root, env: deliverEnv },
    );
    expect(delivered.exitCode, delivered.stderr).toBe(0);
    expect(await remote.ref('acme/app', `agent-runner/${id}`)).toBe(summary.headSha);
    const pull = github.pulls.get(1) as { title: string; body: string };
    for (const subtask of ['alpha', 'beta', 'gamma']) {
      expect(pull.body).toContain(`## Subtask \`${subtask}\`: COMPLETE`);
    }
    expect(pull.body).toContain('### Acceptance criteria');
    expect(pull.body).toContain('### Definition of Done');
    expect(pull.body).not.toContain(DELIVERY_TOKEN);
    github.assertValid();

    // status: the project with its subtasks' states; their own entries belong to it.
    const status = await runCliCaptured(['status', '--json'], { cwd: repo.root, env: process.env });
    const tasks = (
      JSON.parse(status.stdout) as {
        tasks: { taskId: string; status: string; state: string; parent?: string; project?: unknown }[];
      }
    ).tasks;
    expect(tasks.find((task) => task.taskId === id)).toMatchObject({
      status: 'finished',
      state: 'COMPLETE',
      project: {
        subtasks: ['alpha', 'beta', 'gamma'].map((sub) => ({
          id: sub,
          state: 'merged',
          taskId: `${id}--${sub}`,
        })),
      },
    });
    for (const sub of ['alpha', 'beta', 'gamma'])
      expect(tasks.find((task) => task.taskId === `${id}--${sub}`)).toMatchObject({
        status: 'finished',
        state: 'COMPLETE',
        parent: id,
      });
    // gc: the subtasks' worktrees go (their commits are on the integration branch); the integration
    // branch's own commits are on no other branch, so its worktree stays, as any task's would.
    const worktree = (taskId: string) => path.join(repo.root, '.agent-runner', 'worktrees', taskId);
    expect(existsSync(worktree(`${id}--alpha`))).toBe(true);
    const gc = await runCliCaptured(['gc'], { cwd: repo.root, env: process.env });
    expect(gc.exitCode, gc.stderr).toBe(0);
    for (const sub of ['alpha', 'beta', 'gamma']) {
      expect(gc.stdout).toContain(`removed the worktree and sandbox of ${id}--${sub} (COMPLETE)`);
      expect(existsSync(worktree(`${id}--${sub}`))).toBe(false);
    }
    expect(gc.stdout).toMatch(
      new RegExp(`kept ${id}: \\d+ commit\\(s\\) on agent-runner/${id} that are on no other branch`),
    );
    expect(existsSync(worktree(id))).toBe(true);
    expect(git(repo.root, 'rev-parse', integration)).toBe(summary.headSha);
  });

  it('repairs with a fix-up when two subtasks pass alone but their merge fails the combined DoD', async () => {
    const id = 'par-fix';
    models.chat.push(
      {
        reply: decompositionReply(id, [featureSubtask('alpha', 'a'), featureSubtask('beta', 'b')]),
      },
      ...subtaskMeta(`${id}--alpha`),
      ...subtaskMeta(`${id}--beta`),
      // The fix-up task on the integration branch: the Meta-agent instructs its worker, then reviews it.
      ...fixupMeta(id, 'Both feature tests assume they are alone; make each check its own feature only.'),
    );
    models.responses.enqueue(
      ...onlyFeatureTurns(id),
      ...codexTurn(`${id}--fixup-1`, [
        `${writeFileCommand('test/a.test.js', hasFeature('a'))}\n${writeFileCommand('test/b.test.js', hasFeature('b'))}`,
        "git commit -q -am 'Feature tests check their own feature'",
      ]),
    );
    const { repo, summary, journal, result } = await runProject(
      id,
      '# Features\n\nAdd feature a and feature b, each with a test.\n',
      2,
    );
    expect(result.stderr).toBe('');
    expect(summary).toMatchObject({ state: 'COMPLETE', exitCode: 0 });
    // Each subtask passed its own DoD; merged together (one candidate, or one after the other) they broke the
    // combined tree; the one whose merge turned it red got the fix-up, which repaired it.
    const combined = journal
      .filter((event) => event.type === 'combined_dod')
      .map((event) => `${String(event.subtask)}:${(event.dod as { status: string }).status}`);
    expect(combined.at(-1)).toMatch(/^(alpha|beta) \+ fix-up:passed$/);
    const culprit = combined.at(-1)!.split(' ')[0]!;
    expect(combined.at(-2)).toBe(`${culprit}:failed`);
    expect(combined.filter((check) => check.endsWith(':failed')).length).toBeGreaterThan(0);
    // Each merged subtask's criterion ran again on the combined tree: red with the DoD, green after the fix-up.
    const criteria = journal
      .filter((event) => event.type === 'combined_dod')
      .map((event) =>
        (event.criteria as { subtask: string; status: string }[])
          .map((result) => `${result.subtask}:${result.status}`)
          .sort(),
      );
    expect(criteria.at(-1)).toEqual(['alpha:passed', 'beta:passed']);
    expect(criteria.at(-2)?.some((result) => result.endsWith(':failed'))).toBe(true);
    expect(journal.filter((event) => event.type === 'fixup').map((event) => event.state)).toEqual([
      'running',
      'COMPLETE',
    ]);
    const integration = `agent-runner/${id}`;
    expect(git(repo.root, 'log', '--format=%s', integration)).toContain(
      'Feature tests check their own feature',
    );
    expect(git(repo.root, 'show', `${integration}:test/a.test.js`)).toBe(hasFeature('a').trim());
    const note = readFileSync(summary.notePath, 'utf8');
    expect(note).toMatch(/\| `fixup-1` \| `agent-runner\/par-fix--fixup-1` \| merged \|/);
    expect(note).toMatch(/- `fixup-1` \(after merging `(alpha|beta)`\) review: \*\*ok\*\*/);
    // status: the fix-up is an entry of the project; no combined check left an entry behind.
    const status = await runCliCaptured(['status', '--json'], { cwd: repo.root, env: process.env });
    const tasks = (
      JSON.parse(status.stdout) as { tasks: { taskId: string; state: string; parent?: string }[] }
    ).tasks;
    expect(tasks.find((task) => task.taskId === `${id}--fixup-1`)).toMatchObject({
      state: 'COMPLETE',
      parent: id,
    });
    expect(tasks.filter((task) => task.taskId.includes('--check-'))).toEqual([]);
    expect(models.chat.remaining()).toBe(0);
    models.responses.assertComplete();
  });

  it('never runs two subtasks whose write scopes overlap at the same time', async () => {
    const id = 'par-overlap';
    models.chat.push(
      {
        reply: decompositionReply(id, [
          { id: 'alpha', title: 'Add lib/strings.js', write: ['lib/**'] },
          // No lib/ in the base: the scopes overlap only on paths that do not exist yet (lib/README.md).
          { id: 'beta', title: 'Document the library', write: ['**/*.md'] },
        ]),
      },
      ...subtaskMeta(`${id}--alpha`),
      ...subtaskMeta(`${id}--beta`),
    );
    const testOf = (module: string, name: string) =>
      `const test = require('node:test');\nconst assert = require('node:assert');\ntest('${name}', () => assert.strictEqual(typeof require('${module}').${name}, 'function'));\n`;
    models.responses.enqueue(
      ...codexTurn(
        `${id}--alpha`,
        writeAndCommit(
          {
            'lib/strings.js': 'exports.shout = (text) => text.toUpperCase();\n',
            'lib/strings.test.js': testOf('./strings.js', 'shout'),
          },
          'Add strings',
        ),
      ),
      ...codexTurn(
        `${id}--beta`,
        writeAndCommit({ 'lib/README.md': '# lib\n\n`shout(text)` upper-cases.\n' }, 'Document lib'),
      ),
    );
    const { summary, journal } = await runProject(
      id,
      '# Library\n\nAdd lib/strings.js and document the library.\n',
      2,
    );
    expect(summary).toMatchObject({ state: 'COMPLETE', exitCode: 0 });
    const wait = journal.find((event) => event.type === 'subtask_waiting' && event.subtask === 'beta');
    expect(wait).toMatchObject({ kind: 'overlap' });
    expect(wait?.reason).toMatch(/waits for alpha .*a path such as lib\/\S*\.md/);
    // beta started only after alpha merged, so their worker runs never overlapped.
    const alphaMerged = indexOf(
      journal,
      (event) => event.type === 'merge' && event.subtask === 'alpha' && event.status === 'merged',
    );
    expect(
      indexOf(journal, (event) => event.type === 'task_started' && event.subtask === 'beta'),
    ).toBeGreaterThan(alphaMerged);
    const [, alphaEnd] = workerWindow(journal, 'alpha');
    const [betaStart] = workerWindow(journal, 'beta');
    expect(betaStart).toBeGreaterThan(alphaEnd);
    expect(models.chat.remaining()).toBe(0);
    models.responses.assertComplete();
  });
});
