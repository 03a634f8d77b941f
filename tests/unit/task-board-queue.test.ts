/**
 * The server's admission: at most `maxRunning` of its tasks run at once, the others wait `queued` in the
 * order they were started; a stop takes a queued task out of the queue (it ends without starting). The
 * composition behind the board is an App whose runs the test ends at will; the repository, the PRD and the
 * configuration are real.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { TaskSpec } from '../../src/compose/task-spec.js';
import type { TaskSummary } from '../../src/core/types.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { createNodeRepo } from '../support/task-repo.js';

let removeRepo = () => undefined as void;
afterEach(() => removeRepo());

/** An App whose every run waits until the test finishes it. */
function controlledApp() {
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  const app = {
    run: (spec: TaskSpec, hooks?: { signal?: AbortSignal }) =>
      new Promise<TaskSummary>((resolve) => {
        started.push(spec.taskId);
        const end = () => resolve({ taskId: spec.taskId, exitCode: 0, state: 'COMPLETE' } as TaskSummary);
        finish.set(spec.taskId, end);
        hooks?.signal?.addEventListener('abort', end);
      }),
  } as unknown as App;
  return { app, started, finish };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe('the server runs at most maxRunning tasks at once', () => {
  it('queues the rest in order, starts each when a slot frees, and drops a stopped one from the queue', async () => {
    const repo = createNodeRepo();
    removeRepo = repo.remove;
    const { app, started, finish } = controlledApp();
    const board = new TaskBoard(repo.root, app, { ...process.env }, { maxRunning: 1 });
    for (const taskId of ['Q-1', 'Q-2', 'Q-3']) await board.start({ prdPath: 'PRD.md', taskId });
    await settle();
    expect(started).toEqual(['Q-1']);
    const status = async (taskId: string) => (await board.get(taskId))?.status;
    expect(await status('Q-2')).toBe('queued');
    expect(await status('Q-3')).toBe('queued');

    // Stopped while queued: it never starts, and says so.
    expect(board.stop('Q-2')).toBe('stopping');
    finish.get('Q-1')?.();
    await settle();
    expect(started).toEqual(['Q-1', 'Q-3']);
    expect(await board.get('Q-2')).toMatchObject({
      status: 'finished',
      error: 'stopped before it started (it was queued)',
    });
    expect(board.hasLive()).toBe(true);
    finish.get('Q-3')?.();
    await settle();
    expect(board.hasLive()).toBe(false);
  });
});
