/**
 * The review record travels with the task's state on the remote (`refs/agent-runner/tasks/<ID>`), with real git:
 * written into the state commit through the redaction (the probe first sees a planted secret when the record is
 * written unredacted), merged into a fresh clone's record when the task is rebuilt from the remote (a CI runner),
 * and, when the remote's record is not what agent-runner writes (NUL bytes, another shape, huge, a link), not used
 * at all, with one message saying why: the task itself is still rebuilt, the local record unchanged.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { restoreRemoteTask } from '../../src/compose/remote-task.js';
import { writeTaskStateCommit } from '../../src/deliver/task-state-commit.js';
import { Redaction } from '../../src/notes/redact.js';
import { taskStateRef } from '../../src/remote/remote-task-state.js';
import { reviewCursor } from '../../src/review/review-record.js';
import { taskLayout } from '../../src/workspace/layout.js';
import {
  allObjects,
  bareRemote,
  freshClone,
  publishTaskState,
  pushTask,
  run,
} from '../support/bare-remote.js';
import { createFinishedTask, type FinishedTask } from '../support/finished-task.js';

const ID = 'add-slugify-1a2b3c';
const SECRET = 'sk-planted-review-record-4d1c8e';
const URL = 'https://github.test/acme/app/pull/1';

function push(task: FinishedTask, remote: string): void {
  pushTask(task, remote, taskStateRef(ID));
}

/** Rebuilds the task on a fresh clone from `remote`: where from, and what it warned. */
async function restoreFrom(
  root: string,
  remote: string,
  redact: (text: string) => string,
): Promise<{ source: string; warnings: string[] }> {
  const warnings: string[] = [];
  const source = await restoreRemoteTask({
    root,
    taskId: ID,
    url: remote,
    redact,
    warn: (line) => warnings.push(line),
  });
  return { source, warnings };
}

function readLine(at: string, until: string, handled: string[], url = URL): string {
  return `${JSON.stringify({ type: 'review_read', at, url, until, handled })}\n`;
}

async function finishedTask(): Promise<FinishedTask> {
  const task = await createFinishedTask({ taskId: ID });
  onTestFinished(() => rmSync(task.repo.root, { recursive: true, force: true }));
  return task;
}

/** The state commit of `task` with its tree's `review.jsonl` replaced by `review` (a blob, or a link). */
function withForgedReview(task: FinishedTask, review: { text: string } | { link: string }): void {
  const cwd = task.repo.root;
  const ref = taskStateRef(ID);
  const entries = run(cwd, 'ls-tree', `${ref}^{tree}`)
    .split('\n')
    .filter((line) => !line.endsWith('\treview.jsonl'));
  const content = 'text' in review ? review.text : review.link;
  const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], {
    cwd,
    input: content,
    encoding: 'utf8',
  }).trim();
  entries.push(`${'text' in review ? '100644' : '120000'} blob ${blob}\treview.jsonl`);
  const tree = execFileSync('git', ['mktree'], {
    cwd,
    input: `${entries.join('\n')}\n`,
    encoding: 'utf8',
  }).trim();
  const commit = run(cwd, '-c', 'user.name=x', '-c', 'user.email=x@x', 'commit-tree', tree, '-m', 'state');
  run(cwd, 'update-ref', ref, commit);
}

describe('the review record in the task state', () => {
  it('goes with the state, redacted; a fresh clone merges it and reads on from the newest comment', async () => {
    const task = await finishedTask();
    // A secret learnt after the line was written (say, the forge token added at delivery): the probe sees it
    // in what is pushed when the state is written without redaction.
    writeFileSync(
      path.join(task.runDir, 'review.jsonl'),
      readLine('2026-01-02T10:06:00Z', '2026-01-02T10:05:00Z', ['7', SECRET]),
    );
    await writeTaskStateCommit({
      repoRoot: task.repo.root,
      taskId: ID,
      runDir: task.runDir,
      redact: (t) => t,
    });
    const unredacted = bareRemote();
    push(task, unredacted);
    expect(allObjects(unredacted)).toContain(SECRET);

    const redaction = new Redaction();
    redaction.add([SECRET]);
    const remote = await publishTaskState(task, ID, redaction.redact);
    expect(run(task.repo.root, 'ls-tree', '--name-only', taskStateRef(ID)).split('\n').sort()).toEqual([
      'events.jsonl',
      'review.jsonl',
      'task-state.json',
    ]);
    const objects = allObjects(remote);
    expect(objects).not.toContain(SECRET);
    expect(objects).toContain('"handled":["7","[REDACTED]"]');

    // A fresh runner that read a later round itself already: the two records are one now.
    const fresh = freshClone(remote);
    const { runDir } = taskLayout(fresh, ID);
    expect(await restoreFrom(fresh, remote, redaction.redact)).toEqual({ source: 'remote', warnings: [] });
    expect(reviewCursor(runDir, URL)).toEqual({
      since: '2026-01-02T10:05:00Z',
      handled: new Set(['7', '[REDACTED]']),
    });
    writeFileSync(
      path.join(runDir, 'review.jsonl'),
      readLine('2026-01-04T00:00:00Z', '2026-01-03T23:00:00Z', ['12']),
    );
    await restoreRemoteTask({ root: fresh, taskId: ID, url: remote, redact: redaction.redact });
    expect(readFileSync(path.join(runDir, 'review.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    expect(reviewCursor(runDir, URL)).toEqual({ since: '2026-01-03T23:00:00Z', handled: new Set(['12']) });
  });

  it.each([
    [
      'NUL bytes',
      { text: `${readLine('2026-01-02T10:06:00Z', '2026-01-02T10:05:00Z', ['99'])}\0\0` },
      /NUL byte/,
    ],
    ['another shape', { text: '{"type":"review_read","handled":"everything"}\n' }, /line 1 /],
    [
      'a huge record',
      { text: 'x'.repeat(1024 * 1024 + 1) },
      /is \d+ bytes, over the \d+ a review record may hold/,
    ],
    ['a link', { link: '/etc/passwd' }, /review.jsonl is not a plain file/],
  ] as const)(
    'a remote record with %s is not used, and the message says why',
    async (_what, review, problem) => {
      const task = await finishedTask();
      writeFileSync(
        path.join(task.runDir, 'review.jsonl'),
        readLine('2026-01-02T10:06:00Z', '2026-01-02T10:05:00Z', ['7']),
      );
      await writeTaskStateCommit({
        repoRoot: task.repo.root,
        taskId: ID,
        runDir: task.runDir,
        redact: (t) => t,
      });
      withForgedReview(task, review);
      const remote = bareRemote();
      push(task, remote);
      const fresh = freshClone(remote);
      // The task is rebuilt (its journal is sound); only the record is left out.
      const { source, warnings } = await restoreFrom(fresh, remote, (t) => t);
      expect(source).toBe('remote');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(problem);
      expect(warnings[0]).toContain('not used');
      const { runDir } = taskLayout(fresh, ID);
      expect(existsSync(path.join(runDir, 'review.jsonl'))).toBe(false);
      expect(reviewCursor(runDir, URL).since).toBe('1970-01-01T00:00:00.000Z');
    },
  );
});
