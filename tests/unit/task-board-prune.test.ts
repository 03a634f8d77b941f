/**
 * A long-lived server does not keep every task it ran: a task whose journal holds its end is dropped from the
 * board's memory once it ended (its state, exit code and summary are read from the journal), and tasks that
 * ended with an error before their journal did are kept, the newest 100 only. The composition behind the
 * board is an App that runs the real TaskRunner over fakes and writes the real journal in the repository.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { TaskSpec } from '../../src/compose/task-spec.js';
import { TaskRunner } from '../../src/core/task-runner.js';
import { EventJournal } from '../../src/notes/event-journal.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { taskLayout } from '../../src/workspace/layout.js';
import {
  FakeWorker,
  ScriptedMetaAgent,
  SLUGIFY_PLAN,
  assessStep,
  commitSlugify,
  fakeRepo,
  runWorkerStep,
  testRunnerDeps,
  testRunnerOptions,
} from '../support/core-fakes.js';
import { createNodeRepo } from '../support/task-repo.js';

let removeRepo = () => undefined as void;
afterEach(() => removeRepo());

/** Runs each task to COMPLETE with the real runner, its events in the task's real journal. */
function journalingApp(repoRoot: string): App {
  return {
    run: async (spec: TaskSpec) => {
      const journal = new EventJournal(taskLayout(repoRoot, spec.taskId).runDir);
      const state = fakeRepo();
      const runner = new TaskRunner(
        await testRunnerOptions({ taskId: spec.taskId }),
        testRunnerDeps(state, {
          meta: new ScriptedMetaAgent([
            { kind: 'plan', plan: SLUGIFY_PLAN },
            runWorkerStep(),
            assessStep(true),
          ]),
          worker: new FakeWorker(state, [commitSlugify(true)]),
          onEvent: (event) => journal.append(event),
        }),
      );
      return runner.run();
    },
  } as unknown as App;
}

async function allEnded(board: TaskBoard): Promise<void> {
  for (let waited = 0; board.hasLive() && waited < 10_000; waited += 20)
    await new Promise((resolve) => setTimeout(resolve, 20));
  expect(board.hasLive()).toBe(false);
}

describe('the board forgets the tasks it ran', () => {
  it('drops each ended task whose journal holds its end; the journal still tells its state and summary', async () => {
    const repo = createNodeRepo();
    removeRepo = repo.remove;
    const board = new TaskBoard(repo.root, journalingApp(repo.root), { ...process.env });
    for (let index = 1; index <= 12; index += 1)
      await board.start({ prdPath: 'PRD.md', taskId: `DONE-${index}` });
    await allEnded(board);
    expect(board.trackedTasks()).toBe(0);
    expect(await board.get('DONE-7')).toMatchObject({
      status: 'finished',
      state: 'COMPLETE',
      exitCode: 0,
      served: false,
    });
    expect((await board.detail('DONE-7'))?.summary).toMatchObject({ state: 'COMPLETE', exitCode: 0 });
    expect((await board.list()).filter((task) => task.state === 'COMPLETE')).toHaveLength(12);
  });

  it("lists a task it stops running with its journal's end at once, not at the index's next refresh", async () => {
    const repo = createNodeRepo();
    removeRepo = repo.remove;
    const board = new TaskBoard(repo.root, journalingApp(repo.root), { ...process.env });
    const all = { limit: 500, cursor: {}, states: null, nodes: null };
    expect((await board.page(all)).tasks).toEqual([]); // the index is built, and fresh for a second
    for (let index = 1; index <= 3; index += 1)
      await board.start({ prdPath: 'PRD.md', taskId: `PAGED-${index}` });
    await allEnded(board);
    expect(board.trackedTasks()).toBe(0);
    const { tasks } = await board.page(all);
    expect(tasks.map((task) => [task.taskId, task.state, task.served])).toEqual([
      ['PAGED-3', 'COMPLETE', false],
      ['PAGED-2', 'COMPLETE', false],
      ['PAGED-1', 'COMPLETE', false],
    ]);
  });

  it('keeps the newest 100 tasks that ended with an error before their journal had an end', async () => {
    const repo = createNodeRepo();
    removeRepo = repo.remove;
    const failing = {
      run: () => Promise.reject(new Error('the base does not exist')),
    } as unknown as App;
    const board = new TaskBoard(repo.root, failing, { ...process.env });
    for (let index = 1; index <= 104; index += 1)
      await board.start({ prdPath: 'PRD.md', taskId: `FAIL-${index}` });
    await allEnded(board);
    expect(board.trackedTasks()).toBe(100);
    expect(await board.get('FAIL-104')).toMatchObject({ error: 'the base does not exist', exitCode: 2 });
    expect(await board.get('FAIL-1')).toBeNull();
  });
});
