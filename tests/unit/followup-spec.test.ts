/**
 * Which tasks can be followed up, and how a follow-up is rebuilt from the journal the real loop wrote: a new
 * follow-up starts with a budget of its own; `resume` of one interrupted after its plan continues it, counting
 * only what the follow-up spent; a running, unfinished, unknown task or an empty instruction is refused with
 * one message (exit 2).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { followupTaskId } from '../../src/cli/followup-target.js';
import { followupTaskSpec } from '../../src/compose/followup-task-spec.js';
import { runCliCaptured } from '../support/cli.js';
import { resumeTaskSpec } from '../../src/compose/resume-task-spec.js';
import type { StampedEvent } from '../../src/core/events.js';
import { TaskRunner, type TaskRunnerOptions } from '../../src/core/task-runner.js';
import type { Plan } from '../../src/core/types.js';
import { UserError } from '../../src/errors.js';
import { previousAttempt } from '../../src/lifecycle/journal-resume.js';
import { foldJournal } from '../../src/lifecycle/task-journal-state.js';
import { EventJournal } from '../../src/notes/event-journal.js';
import { taskLayout } from '../../src/workspace/layout.js';
import {
  FakeWorker,
  ManualClock,
  ScriptedMetaAgent,
  assessStep,
  commitSlugify,
  fakeRepo,
  runWorkerStep,
  testRunnerDeps,
  testRunnerOptions,
  type FakeRepo,
  type MetaStep,
} from '../support/core-fakes.js';

const ID = 'T-1';
const PLAN: Plan = {
  title: 'Add slugify',
  acceptanceCriteria: [{ id: 'AC1', description: 'slugify works', type: 'functional', critical: true }],
};

function tempRepo(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'ar-followup-spec-'));
  onTestFinished(() => rmSync(root, { recursive: true, force: true }));
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: root });
  return root;
}

/** Runs the loop with the fakes, its events journalled in the repository's run directory as the CLI does. */
async function journalled(
  root: string,
  script: MetaStep[],
  repo: FakeRepo,
  options: Partial<TaskRunnerOptions> = {},
): Promise<void> {
  const journal = new EventJournal(taskLayout(root, ID).runDir);
  const runner = new TaskRunner(
    await testRunnerOptions({
      startOptions: { prdPath: 'PRD.md', prd: '# Slugify', dodSkipped: false },
      ...options,
    }),
    testRunnerDeps(repo, {
      meta: new ScriptedMetaAgent(script),
      worker: new FakeWorker(repo, [commitSlugify(true)]),
      clock: new ManualClock(),
      onEvent: (event: StampedEvent) => journal.append(event),
    }),
  );
  await runner.run();
}

const input = (root: string, instruction = 'Also handle empty input.') => ({
  repoRoot: root,
  taskId: ID,
  instruction,
  cwd: root,
  env: {},
  overrides: {},
});

async function refusal(promise: Promise<unknown>): Promise<UserError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UserError);
  return error as UserError;
}

describe('followupTaskSpec', () => {
  it('an ended task: the next attempt with a budget of its own and the criteria it starts from', async () => {
    const root = tempRepo();
    await journalled(root, [{ kind: 'plan', plan: PLAN }, runWorkerStep(), assessStep(true)], fakeRepo());
    const spec = await followupTaskSpec(input(root));
    if (spec.start.kind !== 'resume') throw new Error('a follow-up resumes the task');
    expect(spec.prd).toBe('# Slugify');
    expect(spec.start.attempt).toBe(2);
    expect(spec.start.previous).toMatchObject({ plan: PLAN, metaCalls: 0, elapsedMs: 0 });
    expect(spec.start.previous.runs).toHaveLength(1);
    expect(spec.start.followup).toMatchObject({
      stage: 'new',
      number: 1,
      instruction: 'Also handle empty input.',
      fromSha: 'c1',
      before: [{ id: 'AC1', status: 'passed' }],
      earlier: { runs: 1, metaCalls: 3 },
    });
  });

  it('resume of a follow-up cut after its plan continues it, counting only what the follow-up spent', async () => {
    const root = tempRepo();
    const repo = fakeRepo();
    await journalled(root, [{ kind: 'plan', plan: PLAN }, runWorkerStep(), assessStep(true)], repo);
    const spec = await followupTaskSpec(input(root));
    if (spec.start.kind !== 'resume' || !spec.start.followup) throw new Error('a follow-up');
    const added = { id: 'AC2', description: 'empty input', type: 'functional', critical: true };
    await journalled(
      root,
      [
        { kind: 'plan', plan: { title: 'x', acceptanceCriteria: [...PLAN.acceptanceCriteria, added] } },
        runWorkerStep(),
        assessStep(true),
      ],
      repo,
      { previous: spec.start.previous, followup: spec.start.followup },
    );
    // The runner died right after the follow-up's plan: the journal ends there.
    const file = path.join(taskLayout(root, ID).runDir, 'events.jsonl');
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const planned = lines.findIndex((line) => line.includes('"type":"followup_planned"'));
    expect(planned).toBeGreaterThan(0);
    writeFileSync(file, `${lines.slice(0, planned + 1).join('\n')}\n`);

    const resumed = await resumeTaskSpec({ repoRoot: root, taskId: ID, cwd: root, env: {}, overrides: {} });
    const start = resumed.spec.start;
    if (start.kind !== 'resume') throw new Error('resumed');
    expect(start.followup).toMatchObject({ stage: 'planned', number: 1, changes: { added: ['AC2'] } });
    expect(start.previous.plan.acceptanceCriteria.map((item) => item.id)).toEqual(['AC1', 'AC2']);
    // One Meta-agent call since the follow-up began (its plan); the first run's three are not counted.
    expect(start.previous.metaCalls).toBe(1);
    expect(start.previous.workerUsage).toMatchObject({ inputTokens: 0, outputTokens: 0 });
    // A follow-up cannot start while this one has not ended.
    const unfinished = await refusal(followupTaskSpec(input(root, 'more')));
    expect(unfinished.message).toMatch(/did not end .* `agent-runner resume T-1`/);
    expect(unfinished.exitCode).toBe(2);
  });

  it('a running task, an unknown one and an empty instruction are refused with what to do', async () => {
    const root = tempRepo();
    const unknown = await refusal(followupTaskSpec(input(root)));
    expect(unknown.code).toBe('task_not_found');
    expect(unknown.message).toMatch(/Task T-1 has no journal .* nothing to follow up/);

    await journalled(root, [{ kind: 'plan', plan: PLAN }, runWorkerStep(), assessStep(true)], fakeRepo());
    const empty = await refusal(followupTaskSpec(input(root, '  \n')));
    expect(empty.message).toMatch(/instruction is empty/);

    // A runner (this process, alive) holds the task and its journal has not ended.
    const runDir = taskLayout(root, ID).runDir;
    new EventJournal(runDir).append({
      type: 'task_started',
      taskId: ID,
      branch: `agent-runner/${ID}`,
      baseSha: 'base000000',
      worktreePath: '/tmp/worktree',
      dirtyStart: false,
      at: '2026-11-28T10:00:00.000Z',
    });
    writeFileSync(
      path.join(runDir, 'lock'),
      JSON.stringify({
        pid: process.pid,
        hostname: hostname(),
        startedAt: 'now',
        command: 'followup',
        taskId: ID,
      }),
    );
    const running = await refusal(followupTaskSpec(input(root)));
    expect(running.code).toBe('task_locked');
    expect(running.exitCode).toBe(2);
    expect(running.message).toMatch(/Task T-1 is running \(agent-runner followup, pid \d+\)/);
  });

  it('the command: the task by id or branch, the instruction from exactly one of --message and --message-file', async () => {
    expect(followupTaskId('agent-runner/T-1')).toBe('T-1');
    expect(followupTaskId('T-1')).toBe('T-1');
    const root = tempRepo();
    const both = await runCliCaptured(['followup', ID, '--message', 'a', '--message-file', 'b.md'], {
      cwd: root,
      env: { CI: 'true' },
    });
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toMatch(/exactly one of `--message TEXT` or `--message-file FILE`/);
    const missing = await runCliCaptured(['followup', ID, '--message-file', 'review.md'], {
      cwd: root,
      env: { CI: 'true' },
    });
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(/Cannot read the follow-up instruction .*review\.md/);
    // A readable file is the instruction: here the task is unknown, which is the next refusal.
    writeFileSync(path.join(root, 'review.md'), 'Rename slugify to toSlug.\n');
    const identity = ['-c', 'user.name=Test', '-c', 'user.email=test@example.com'];
    execFileSync('git', [...identity, 'commit', '-q', '--allow-empty', '-m', 'initial'], { cwd: root });
    const unknown = await runCliCaptured(['followup', `agent-runner/${ID}`, '--message-file', 'review.md'], {
      cwd: root,
      env: { CI: 'true' },
    });
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toMatch(/Task T-1 has no journal/);
  });
});

describe("a follow-up's wall clock", () => {
  it('counts from the follow-up: neither the first run nor the time between them', () => {
    const at = (minutes: number) => new Date(Date.UTC(2026, 10, 28, 10, minutes)).toISOString();
    const zero = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 };
    const events = [
      {
        type: 'task_started',
        taskId: ID,
        branch: 'b',
        baseSha: 's',
        worktreePath: 'w',
        dirtyStart: false,
        at: at(0),
      },
      { type: 'plan', plan: PLAN, usage: zero, at: at(1) },
      { type: 'transition', from: 'VALIDATING', to: 'COMPLETE', at: at(10) },
      // Fifty minutes later, a follow-up: it runs five minutes before its runner dies.
      {
        type: 'followup_started',
        number: 1,
        instruction: 'more',
        fromSha: 'c1',
        before: [],
        earlier: { runs: 0, metaCalls: 1, usage: { meta: zero, worker: zero, total: zero } },
        at: at(60),
      },
      {
        type: 'task_started',
        taskId: ID,
        branch: 'b',
        baseSha: 's',
        worktreePath: 'w',
        dirtyStart: false,
        at: at(60),
      },
      { type: 'plan', plan: PLAN, usage: zero, at: at(62) },
      { type: 'transition', from: 'PLANNING', to: 'RUNNING', at: at(65) },
    ] as unknown as StampedEvent[];
    const state = foldJournal(ID, events);
    expect(state.elapsedMs).toBe(15 * 60_000);
    expect(state.followup).toMatchObject({ number: 1, planned: true, elapsedBefore: 10 * 60_000 });
    // The page's list of follow-ups: this one has not ended (its runner died before task_finished).
    expect(state.followups).toEqual([{ number: 1, instruction: 'more', at: at(60), state: null }]);
    const previous = previousAttempt(state);
    expect(previous?.elapsedMs).toBe(5 * 60_000);
    expect(previous?.metaCalls).toBe(1);
  });
});
