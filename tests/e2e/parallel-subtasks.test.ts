/**
 * Parallel work end to end: `agent-runner run` with the real CLI, real git, real Docker sandboxes and the
 * real codex binary; only the models are scripted, and they answer each subtask by matching its task id in
 * the request (subtasks run at once, so their calls interleave).
 */
import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { runCliCaptured } from '../support/cli.js';
import { assessmentReply, decompositionReply, reviewReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { assistantMessage, commandCall, type ScriptedReply } from '../support/scripted-responses-server.js';
import { createNodeRepo, git, writeFileCommand } from '../support/task-repo.js';

const docker = createDockerClient();
const models = scriptedModelServers();

/** A codex turn for the worker whose prompt names `match`: runs the commands, then says it is done. */
function codexTurn(match: string, commands: string[]): ScriptedReply[] {
  return [
    ...commands.map((command): ScriptedReply => ({ kind: 'output', items: [commandCall(command)], match })),
    { kind: 'output', items: [assistantMessage(`Done: ${match}`)], match },
  ];
}

/**
 * The Meta-agent's part of one subtask: run the worker once, judge it done, review it ok. Each matched by its
 * request as well as the task id: the review is asked as soon as the checks passed, beside the assessment.
 */
function subtaskMeta(taskId: string) {
  return [
    {
      reply: runWorkerReply('Implement it with a test, run npm test, commit.'),
      match: [taskId, NEXT_ACTION],
    },
    {
      reply: assessmentReply(true, ['AC-1'], 'Implemented, tested and committed.'),
      match: [taskId, ASSESSMENT],
    },
    { reply: reviewReply(taskId), match: `Review subtask ${taskId}.` },
  ];
}

/** What a loop decision's and an assessment's requests end with (src/meta/meta-agent.ts). */
const NEXT_ACTION = 'Reply with one `next_action` message.';
const ASSESSMENT = 'Reply with one `completion_assessment` message.';

const writeAndCommit = (files: Record<string, string>, message: string) => [
  Object.entries(files)
    .map(([file, content]) => `mkdir -p ${path.posix.dirname(file)} && ${writeFileCommand(file, content)}`)
    .join('\n'),
  // Long enough for two workers to be seen at work at the same time.
  `sleep 2 && git add -A && git commit -q -m ${JSON.stringify(message)}`,
];

/** A feature test that passes only while its feature is the only one (two of them cannot merge). */
const onlyFeature = (name: string) =>
  `const test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\nconst path = require('node:path');\ntest('${name} is the only feature', () => assert.deepStrictEqual(fs.readdirSync(path.join(__dirname, '..', 'features')), ['${name}.js']));\n`;
/** A feature test that passes while its feature is there. */
const hasFeature = (name: string) =>
  `const test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\nconst path = require('node:path');\ntest('${name} is a feature', () => assert.ok(fs.readdirSync(path.join(__dirname, '..', 'features')).includes('${name}.js')));\n`;
/** A subtask that adds `features/<file>.js` with its test, checked by running that test. */
const featureSubtask = (id: string, file: string) => ({
  id,
  title: `Add feature ${file}`,
  write: [`features/${file}.js`, `test/${file}.test.js`],
  check: `node --test test/${file}.test.js`,
});

/** alpha and beta each add their feature with a test that passes only while it is the only feature. */
const onlyFeatureTurns = (id: string) => [
  ...codexTurn(
    `${id}--alpha`,
    writeAndCommit({ 'features/a.js': 'module.exports = 1;\n', 'test/a.test.js': onlyFeature('a') }, 'Add a'),
  ),
  ...codexTurn(
    `${id}--beta`,
    writeAndCommit({ 'features/b.js': 'module.exports = 2;\n', 'test/b.test.js': onlyFeature('b') }, 'Add b'),
  ),
];

/** The Meta-agent's part of the project's first fix-up: instruct its worker, judge it done, review it ok. */
const fixupMeta = (id: string, instruction: string) => [
  { reply: runWorkerReply(instruction), match: [`${id}--fixup-1`, NEXT_ACTION] },
  {
    reply: assessmentReply(true, ['AC-1'], 'The combined tree passes.'),
    match: [`${id}--fixup-1`, ASSESSMENT],
  },
  { reply: reviewReply(`${id}--fixup-1`), match: `Review subtask ${id}--fixup-1.` },
];

type Event = { type: string; at: string; subtask?: string; [key: string]: unknown };

async function runProject(taskId: string, prd: string, max: number, extraConfig = '', split = 'always') {
  const repo = createNodeRepo();
  onTestFinished(repo.remove);
  writeFileSync(path.join(repo.root, 'BIG.md'), prd);
  writeFileSync(
    path.join(repo.root, 'agent-runner.yaml'),
    `parallel:\n  split: ${split}\n  max: ${max}\n${extraConfig}`,
  );
  git(repo.root, 'add', '-A');
  git(repo.root, 'commit', '-q', '-m', 'project PRD');
  onTestFinished(async () => {
    // This run's containers: other runs on the same engine (another checkout's tests) use the same task ids.
    const left = (await docker.listContainers({ all: true })).filter(
      (container) =>
        (container.Labels['agent-runner.task'] ?? '').startsWith(taskId) &&
        container.Labels['agent-runner.repo'] === realpathSync(repo.root),
    );
    expect(left).toEqual([]);
  });
  const result = await runCliCaptured(['run', '--prd', 'BIG.md', '--task-id', taskId, '--json'], {
    cwd: repo.root,
    env: {
      ...process.env,
      OPENAI_BASE_URL: models.chat.url,
      OPENAI_API_KEY: 'e2e-parallel-key',
      AGENT_RUNNER_WORKER_BASE_URL: models.responses.baseUrl('127.0.0.1'),
      AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
      CI: 'true',
    },
  });
  const events = result.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Event);
  const summary = events.at(-1) as Event & { state: string; notePath: string; exitCode: number };
  const projectJournal = path.join(repo.root, '.agent-runner', 'runs', taskId, 'project.jsonl');
  const journal = (existsSync(projectJournal) ? readFileSync(projectJournal, 'utf8') : '')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Event);
  return { repo, result, events, summary, journal };
}

/** [start, end] of the subtask's worker run, from the project journal. */
function workerWindow(journal: Event[], subtask: string): [number, number] {
  const start = journal.find((event) => event.type === 'worker_started' && event.subtask === subtask);
  const end = journal.find((event) => event.type === 'worker_finished' && event.subtask === subtask);
  if (!start || !end) throw new Error(`no worker run of ${subtask} in the journal`);
  return [Date.parse(start.at), Date.parse(end.at)];
}

const indexOf = (events: Event[], predicate: (event: Event) => boolean) => {
  const index = events.findIndex(predicate);
  if (index === -1) throw new Error('event not found');
  return index;
};

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
  it('with a planner that answers at once, `split: auto` runs the subtasks as one task with all their criteria', async () => {
    const id = 'par-fast';
    models.chat.push(
      { reply: decompositionReply(id, [featureSubtask('alpha', 'a'), featureSubtask('beta', 'b')]) },
      { reply: runWorkerReply('Add both features with their tests, commit.'), match: [id, NEXT_ACTION] },
      {
        reply: assessmentReply(true, ['alpha.AC-1', 'beta.AC-1'], 'Both features are there.'),
        match: [id, ASSESSMENT],
      },
    );
    models.responses.enqueue(
      ...codexTurn(
        id,
        writeAndCommit(
          {
            'features/a.js': 'module.exports = 1;\n',
            'test/a.test.js': hasFeature('a'),
            'features/b.js': 'module.exports = 2;\n',
            'test/b.test.js': hasFeature('b'),
          },
          'Add a and b',
        ),
      ),
    );
    const { result, summary, events } = await runProject(
      id,
      '# Features\n\nAdd features a and b.\n',
      2,
      '',
      'auto',
    );
    expect(summary).toMatchObject({ state: 'COMPLETE', branch: `agent-runner/${id}`, exitCode: 0 });
    expect(result.stderr).toMatch(/split the PRD into 2 subtasks, but answered in \d+ ms/);
    // One task: no subtask ran, and both subtasks' criteria were checked in it.
    expect(events.some((event) => event.type === 'task_started' && String(event.taskId).includes('--'))).toBe(
      false,
    );
    const checks = events.filter((event) => event.type === 'criteria_checks').at(-1) as
      (Event & { results: { criterionId: string; status: string }[] }) | undefined;
    expect(checks?.results.map((check) => [check.criterionId, check.status])).toEqual([
      ['alpha.AC-1', 'passed'],
      ['beta.AC-1', 'passed'],
    ]);
    expect(models.chat.remaining()).toBe(0);
    models.responses.assertComplete();
  });
  it("a fix-up that makes the DoD green by deleting a subtask's work cannot end COMPLETE", async () => {
    const id = 'par-undo';
    models.chat.push(
      {
        reply: decompositionReply(id, [featureSubtask('alpha', 'a'), featureSubtask('beta', 'b')]),
      },
      ...subtaskMeta(`${id}--alpha`),
      ...subtaskMeta(`${id}--beta`),
      // Its reviewer is fooled: the deletion must be caught by the facts, not by the review.
      ...fixupMeta(id, 'Make the combined tree pass.'),
    );
    models.responses.enqueue(
      ...onlyFeatureTurns(id),
      // The "repair": remove feature a, so b is the only feature and npm test passes.
      ...codexTurn(`${id}--fixup-1`, ["git rm -q features/a.js test/a.test.js && git commit -q -m 'Drop a'"]),
    );
    // Ten Meta-agent calls: the plan, three per subtask, three for the fix-up; planning again would be the 11th.
    // A fresh sandbox for every combined check here (the other tests use the integration sandbox).
    const { repo, summary, journal } = await runProject(
      id,
      '# Features\n\nAdd feature a and feature b, each with a test.\n',
      2,
      '  checkSandbox: fresh\nlimits:\n  maxMetaCalls: 10\n',
    );
    expect(summary.state).not.toBe('COMPLETE');
    expect(summary.exitCode).not.toBe(0);
    const checks = journal.filter((event) => event.type === 'combined_dod') as (Event & {
      dod: { status: string };
      criteria: { subtask: string; status: string }[];
      headSha: string;
      sandbox: unknown;
    })[];
    expect(checks.map((check) => check.sandbox)).toEqual(
      checks.map(() => ({ reused: false, reason: 'parallel.checkSandbox: fresh' })),
    );
    // After the fix-up the DoD passed, but alpha's own criterion failed on the combined tree.
    const afterFixup = checks.find((check) => String(check.subtask).endsWith('+ fix-up'));
    expect(afterFixup?.dod.status).toBe('passed');
    expect(afterFixup?.criteria).toContainEqual(
      expect.objectContaining({ subtask: 'alpha', status: 'failed' }),
    );
    // The fix-up's review was told it deleted alpha's files.
    const review = models.chat.requests.find((request) =>
      JSON.stringify(request.body.messages).includes(`Review subtask ${id}--fixup-1`),
    );
    expect(JSON.stringify(review?.body.messages)).toContain('DELETED 2');
    // Taken back: the fix-up is not on the integration branch, every subtask merged there keeps its work, and
    // the record is of the head that remained (its last check passed).
    const integration = `agent-runner/${id}`;
    expect(git(repo.root, 'log', '--format=%s', integration)).not.toContain('Drop a');
    const merged = journal
      .filter((event) => event.type === 'subtask_state' && event.state === 'merged')
      .map((event) => String(event.subtask));
    expect(merged.length).toBeGreaterThan(0);
    const tree = git(repo.root, 'ls-tree', '--name-only', '-r', integration);
    for (const subtask of merged) expect(tree).toContain(`features/${subtask === 'alpha' ? 'a' : 'b'}.js`);
    expect(journal.filter((event) => event.type === 'merge').map((event) => event.status)).toContain(
      'reverted',
    );
    const standing = checks.filter((check) => check.headSha === summary.headSha);
    expect(standing.at(-1)?.dod.status).toBe('passed');
    const failed = journal.find((event) => event.type === 'subtask_state' && event.state === 'failed') as
      (Event & { reason: string }) | undefined;
    expect(failed?.reason).toContain('subtask `alpha`, criterion AC-1: `node --test test/a.test.js` failed');
    const note = readFileSync(summary.notePath, 'utf8');
    expect(note).toContain(`**passed** on \`${String(summary.headSha).slice(0, 12)}\``);
    expect(note).toContain('Ran in a fresh sandbox (parallel.checkSandbox: fresh).');
    expect(note).toMatch(/\| reverted \|/);
    models.responses.assertComplete();
  });

  it('subtasks reviewed together merge as one candidate; a red batch is bisected and only the culprit is repaired', async () => {
    const id = 'par-train';
    const names = ['alpha', 'beta', 'gamma'];
    models.chat.push(
      {
        reply: decompositionReply(
          id,
          names.map((name) => ({
            id: name,
            title: `Add feature ${name}`,
            write: [`features/${name}.js`, `test/${name}.test.js`],
            check: `node --test test/${name}.test.js`,
          })),
        ),
      },
      ...names.flatMap((name) => {
        const [run, assess, review] = subtaskMeta(`${id}--${name}`);
        // The three reviews come back together: the three subtasks are ready at the same moment.
        return [run!, assess!, { ...review!, together: { name: 'reviews', count: 3 } }];
      }),
      ...fixupMeta(id, 'Make the gamma test check its own feature.'),
    );
    models.responses.enqueue(
      ...codexTurn(
        `${id}--alpha`,
        writeAndCommit(
          { 'features/alpha.js': '1;\n', 'test/alpha.test.js': hasFeature('alpha') },
          'Add alpha',
        ),
      ),
      ...codexTurn(
        `${id}--beta`,
        writeAndCommit({ 'features/beta.js': '2;\n', 'test/beta.test.js': hasFeature('beta') }, 'Add beta'),
      ),
      // The culprit: its test passes alone and fails beside any other feature.
      ...codexTurn(
        `${id}--gamma`,
        writeAndCommit(
          { 'features/gamma.js': '3;\n', 'test/gamma.test.js': onlyFeature('gamma') },
          'Add gamma',
        ),
      ),
      ...codexTurn(`${id}--fixup-1`, [
        `${writeFileCommand('test/gamma.test.js', hasFeature('gamma'))}\ngit commit -q -am 'gamma checks its own feature'`,
      ]),
    );
    const { repo, summary, journal } = await runProject(
      id,
      '# Features\n\nAdd features alpha, beta and gamma, each with a test.\n',
      3,
    );
    expect(summary).toMatchObject({ state: 'COMPLETE', exitCode: 0 });
    const checks = (
      journal.filter((event) => event.type === 'combined_dod') as (Event & { dod: { status: string } })[]
    ).map((event) => ({ label: String(event.subtask), status: event.dod.status }));
    // One candidate of three, red; bisected. The subtask whose merge turns the tree red (gamma's test fails
    // beside any other feature, so which one depends on the batch's order) is left alone on a red check and
    // gets the one fix-up; the other two merge without one.
    expect(checks[0]?.label.split(', ').sort()).toEqual(names);
    expect(checks[0]?.status).toBe('failed');
    const repaired = checks.findIndex((check) => check.label.endsWith(' + fix-up'));
    const culprit = checks[repaired]?.label.replace(' + fix-up', '');
    expect(checks[repaired]?.status).toBe('passed');
    expect(checks[repaired - 1]).toEqual({ label: culprit, status: 'failed' });
    const others = checks
      .slice(1)
      .filter((check) => check.label !== culprit && !check.label.endsWith('+ fix-up'));
    expect(others.map((check) => check.status)).toEqual(others.map(() => 'passed'));
    expect(others.flatMap((check) => check.label.split(', ')).sort()).toEqual(
      names.filter((name) => name !== culprit),
    );
    expect(journal.filter((event) => event.type === 'fixup' && event.state === 'running')).toHaveLength(1);
    const integration = `agent-runner/${id}`;
    const files = git(repo.root, 'ls-tree', '--name-only', '-r', integration);
    for (const name of names) expect(files).toContain(`features/${name}.js`);
    expect(models.chat.remaining()).toBe(0);
    models.responses.assertComplete();
  });
});
