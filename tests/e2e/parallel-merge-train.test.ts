/**
 * Parallel work end to end, continued (tests/e2e/parallel-subtasks.test.ts has the first part): split: auto as one
 * task, a fix-up that deletes a subtask's work, the merge train's bisection.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assessmentReply, decompositionReply, runWorkerReply } from '../support/meta-replies.js';
import { git, writeFileCommand } from '../support/task-repo.js';
import type { Event } from '../support/parallel-project.js';
import {
  projectRunner,
  codexTurn,
  subtaskMeta,
  NEXT_ACTION,
  ASSESSMENT,
  writeAndCommit,
  onlyFeature,
  hasFeature,
  featureSubtask,
  onlyFeatureTurns,
  fixupMeta,
} from '../support/parallel-project.js';
import { scriptedModelServers } from '../support/scripted-models.js';

const models = scriptedModelServers();
const runProject = projectRunner(models);

describe('agent-runner run: a PRD split into subtasks (end to end): merging and repairing', () => {
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
