/**
 * Ctrl-C during a Meta-agent call: the call in flight is aborted within a second (real CLI, git, Docker and
 * codex; a scripted model that never answers). A file of its own: its one-second bound runs in the `timed`
 * project, alone on the machine (vitest.config.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  SHORT_TIMEOUTS_YAML,
  labelledContainers,
  readNote,
  setupFaultTask,
  startRunner,
  waitForJournalEvent,
} from '../support/faults-harness.js';
import { planReply } from '../support/meta-replies.js';

describe('interrupts', () => {
  it('Ctrl-C aborts a Meta-agent call in flight within a second', async () => {
    const id = 'cmp-sigint-meta';
    // A long request timeout: only the interrupt can end the hanging call quickly.
    const task = await setupFaultTask(
      id,
      SHORT_TIMEOUTS_YAML.replace('requestTimeout: 5s', 'requestTimeout: 120s'),
    );
    task.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works', critical: true }]) },
      { hang: true },
    );
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], {
      cwd: task.root,
      env: task.env,
    });
    await waitForJournalEvent(
      task.root,
      id,
      (event) => event.type === 'transition' && event.to === 'RUNNING',
      runner,
    );
    for (let waited = 0; task.chat.requests.length < 2 && waited < 10_000; waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(task.chat.requests).toHaveLength(2);
    const interruptedAt = Date.now();
    runner.child.kill('SIGINT');
    await waitForJournalEvent(
      task.root,
      id,
      (event) => event.type === 'transition' && event.to === 'NEEDS_REVIEW',
      undefined,
      10_000,
    );
    expect(Date.now() - interruptedAt).toBeLessThan(1000);
    expect((await runner.exited).code).toBe(130);
    expect(readNote(task.root, id)).toContain('| **State** | **NEEDS_REVIEW** (interrupted)');
    expect(await labelledContainers(id, task.root)).toEqual([]);
  });
});
