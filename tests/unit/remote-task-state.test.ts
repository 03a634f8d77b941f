/**
 * A task's state on the remote (`refs/agent-runner/tasks/<ID>`), with real git: written from the journal through
 * the redaction (a planted secret is in no object the remote receives, and the probe first proves it sees the
 * secret when it is there), read back on a machine with only the remote, and refused with one message (exit 2)
 * when it is malformed or hostile. A follow-up built from it takes the history and the plan, never what would
 * weaken the bar: the base's recorded DoD, a skipped DoD, the forge, the worker's session.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { followupTaskSpec } from '../../src/compose/followup-task-spec.js';
import { restoreRemoteTask } from '../../src/compose/remote-task.js';
import { lastPushedSha } from '../../src/deliver/delivery-record.js';
import { writeTaskStateCommit } from '../../src/deliver/task-state-commit.js';
import { UserError } from '../../src/errors.js';
import { Redaction } from '../../src/notes/redact.js';
import { MAX_TASK_STATE_BYTES, readTaskState, taskStateRef } from '../../src/remote/remote-task-state.js';
import { taskLayout } from '../../src/workspace/layout.js';
import {
  allObjects,
  bareRemote,
  freshClone,
  publishTaskState,
  pushTask,
  run,
} from '../support/bare-remote.js';
import { addPlanEvent, createFinishedTask, type FinishedTask } from '../support/finished-task.js';

const SECRET = 'sk-planted-remote-state-7f3e9a1c5b';
const ID = 'add-slugify-1a2b3c';

async function finished(startOptions: Record<string, unknown> = {}): Promise<FinishedTask> {
  const task = await createFinishedTask({
    startOptions: { prd: `# Add slugify\nKey: ${SECRET}\n`, ...startOptions },
  });
  onTestFinished(() => rmSync(task.repo.root, { recursive: true, force: true }));
  addPlanEvent(task);
  return task;
}

/** Pushes the task's branch and state to `remote`, as delivery does. */
function push(task: FinishedTask, remote: string, stateRef = taskStateRef(ID)): void {
  pushTask(task, remote, stateRef);
}

/** A hand-made state commit with `files` (name → content, or a link), under the task's state ref of `repo`. */
function forgedState(repo: string, files: Record<string, string | { link: string }>): void {
  const entries = Object.entries(files).map(([name, content]) => {
    const link = typeof content !== 'string';
    const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], {
      cwd: repo,
      input: link ? content.link : content,
      encoding: 'utf8',
    }).trim();
    return `${link ? '120000' : '100644'} blob ${blob}\t${name}\n`;
  });
  const tree = execFileSync('git', ['mktree'], {
    cwd: repo,
    input: entries.join(''),
    encoding: 'utf8',
  }).trim();
  const commit = run(repo, '-c', 'user.name=x', '-c', 'user.email=x@x', 'commit-tree', tree, '-m', 'state');
  run(repo, 'update-ref', taskStateRef(ID), commit);
}

function header(events: number, taskId = ID): string {
  return JSON.stringify({
    format: 'agent-runner-task-state',
    version: 1,
    taskId,
    events,
    workerEventsOmitted: false,
  });
}

async function refusal(repo: string): Promise<UserError> {
  const error = await readTaskState(repo, taskStateRef(ID), ID).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UserError);
  return error as UserError;
}

describe('the task state on the remote', () => {
  it('keeps a planted secret out of every object the remote receives; the probe sees it when it is not redacted', async () => {
    const task = await finished();
    // The probe sees the secret where it is planted: the journal on disk, and a state written without redaction.
    expect(readFileSync(path.join(task.runDir, 'events.jsonl'), 'utf8')).toContain(SECRET);
    const unredacted = bareRemote();
    await writeTaskStateCommit({
      repoRoot: task.repo.root,
      taskId: ID,
      runDir: task.runDir,
      redact: (text) => text,
    });
    push(task, unredacted);
    expect(allObjects(unredacted)).toContain(SECRET);

    const redaction = new Redaction();
    redaction.add([SECRET]);
    const ref = await writeTaskStateCommit({
      repoRoot: task.repo.root,
      taskId: ID,
      runDir: task.runDir,
      redact: redaction.redact,
    });
    expect(ref).toBe(taskStateRef(ID));
    const remote = bareRemote();
    push(task, remote);
    const objects = allObjects(remote);
    expect(objects).not.toContain(SECRET);
    // What was pushed is the state, redacted: the PRD with the secret masked.
    expect(objects).toContain('# Add slugify');
    expect(objects).toContain('[REDACTED]');
  });

  it('rebuilds the task on a machine with only the remote; the follow-up takes its history, not what would weaken the bar', async () => {
    const task = await finished({ dodSkipped: true, forge: 'gitlab', base: 'main' });
    const redaction = new Redaction();
    const remote = await publishTaskState(task, ID, redaction.redact);
    const fresh = freshClone(remote);
    const state = await readTaskState(fresh, taskStateRef(ID), ID);
    expect(state.header).toMatchObject({ taskId: ID, workerEventsOmitted: false });
    expect(state.events.map((event) => event.type)).toContain('task_finished');

    expect(await restoreRemoteTask({ root: fresh, taskId: ID, url: remote, redact: redaction.redact })).toBe(
      'remote',
    );
    const layout = taskLayout(fresh, ID);
    expect(run(fresh, 'rev-parse', layout.branchRef)).toBe(task.head);
    // The next push's lease is the remote's branch head; the journal is the remote's.
    expect(lastPushedSha(layout.runDir, remote)).toBe(task.head);
    expect(readFileSync(path.join(layout.runDir, 'events.jsonl'), 'utf8')).toBe(state.journal);
    // This machine's journal is as long now: asked again, it is used as it is.
    expect(await restoreRemoteTask({ root: fresh, taskId: ID, url: remote, redact: redaction.redact })).toBe(
      'local',
    );

    const common = {
      repoRoot: fresh,
      taskId: ID,
      instruction: 'Also handle empty input.',
      cwd: fresh,
      env: {},
      overrides: {},
    };
    const trusted = await followupTaskSpec(common);
    const spec = await followupTaskSpec({ ...common, origin: 'remote' });
    // The same journal read as this machine's own keeps what the remote's may not give.
    if (trusted.start.kind !== 'resume' || spec.start.kind !== 'resume')
      throw new Error('a follow-up resumes');
    expect(trusted.dodSkipped).toBe(true);
    expect(trusted.start.previous.baseline).toBeDefined();
    expect(trusted.start.previous.runs[0]?.threadId).toBe('t-1');
    expect(trusted.config.deliver.forge).toBe('gitlab');
    expect(spec.dodSkipped).toBe(false);
    expect(spec.start.previous.baseline).toBeUndefined();
    expect(spec.start.previous.threadId).toBeNull();
    expect(spec.start.previous.runs.map((r) => r.threadId)).toEqual([null]);
    expect(spec.config.deliver.forge).toBe('auto');
    expect(spec.base).toBe(run(task.repo.root, 'rev-parse', 'main'));
    expect(spec.prd).toContain('# Add slugify');
    expect(spec.start.followup?.fromSha).toBe(task.head);
  });

  it('refuses a remote with the branch but no state, with the fix', async () => {
    const task = await finished();
    const remote = bareRemote();
    run(task.repo.root, 'push', '-q', remote, `${task.branch}:refs/heads/${task.branch}`);
    const fresh = freshClone(remote);
    const error = await restoreRemoteTask({
      root: fresh,
      taskId: ID,
      url: 'https://example.test/acme/app.git',
      redact: (t) => t,
    }).then(
      () => null,
      (caught: unknown) => caught as UserError,
    );
    expect(error?.exitCode).toBe(2);
    expect(error?.code).toBe('task_not_found');
    expect(error?.message).toContain(
      `the branch agent-runner/${ID} is there, but not the task's state (refs/agent-runner/tasks/${ID})`,
    );
    expect(error?.message).toContain(`agent-runner deliver ${ID}`);
  });

  it('refuses a malformed or hostile state with one message naming the problem (journal_invalid, exit 2)', async () => {
    const task = await finished();
    const repo = task.repo.root;
    const journal = readFileSync(path.join(task.runDir, 'events.jsonl'), 'utf8');
    const events = journal.trim().split('\n').length;
    const cases: [Record<string, string | { link: string }>, RegExp][] = [
      [
        { 'task-state.json': header(events), 'events.jsonl': journal, 'hook.sh': 'rm -rf ~' },
        /its tree holds/,
      ],
      [
        { 'task-state.json': header(events), 'events.jsonl': { link: '/etc/passwd' } },
        /events.jsonl is not a plain file/,
      ],
      [
        { 'task-state.json': '{"format":"agent-runner-task-state"', 'events.jsonl': journal },
        /task-state.json is not JSON/,
      ],
      [
        {
          'task-state.json': JSON.stringify({ ...JSON.parse(header(events)), maxIterations: 99 }),
          'events.jsonl': journal,
        },
        /task-state.json : Unrecognized key/,
      ],
      [
        { 'task-state.json': header(events, 'other-task'), 'events.jsonl': journal },
        /it names task "other-task"/,
      ],
      [
        { 'task-state.json': header(events + 1), 'events.jsonl': journal },
        /its journal has \d+ events, task-state.json says \d+/,
      ],
      [
        {
          'task-state.json': header(events),
          'events.jsonl': journal.replace('"type":"task_finished"', '"type":"task_finishd"'),
        },
        /line \d+ \(task_finishd\)|line \d+ /,
      ],
      [
        {
          'task-state.json': header(events),
          'events.jsonl': journal.replaceAll(`agent-runner/${ID}`, 'agent-runner/other'),
        },
        /its journal starts task .* on "agent-runner\/other"/,
      ],
      [
        { 'task-state.json': header(events), 'events.jsonl': journal.replace(/"prd":"[^"]*",?/, '') },
        /line 1 \(task_started\) options.prd: Invalid input/,
      ],
    ];
    for (const [files, problem] of cases) {
      forgedState(repo, files);
      const error = await refusal(repo);
      expect(error.code).toBe('journal_invalid');
      expect(error.exitCode).toBe(2);
      expect(error.message).toMatch(problem);
      expect(error.message).toContain(`agent-runner deliver ${ID}`);
    }
    // Not a commit at all, and a journal over the cap: refused before it is read.
    const tree = run(repo, 'write-tree');
    run(repo, 'update-ref', taskStateRef(ID), run(repo, 'rev-parse', `${tree}^{tree}`));
    expect((await refusal(repo)).message).toMatch(/it is not a commit/);
    forgedState(repo, {
      'task-state.json': header(events),
      'events.jsonl': 'x'.repeat(MAX_TASK_STATE_BYTES + 1),
    });
    expect((await refusal(repo)).message).toMatch(/events.jsonl is \d+ bytes, over the \d+ a state may hold/);
  });
});
