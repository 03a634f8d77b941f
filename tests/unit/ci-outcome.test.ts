/**
 * What agent-runner-ci tells the CI about a finished run (scripts/ci/ci-outcome.mjs): the job's exit code and
 * the annotation's message. The summary it reads is the one `run --json` ends with, built here by the CLI's own
 * `summaryObject` from a finished task and a delivery that really failed (deliverTask against a repository
 * without the remote), so the message is tested on the shape the script receives.
 */
import { describe, expect, it } from 'vitest';
import { messageOf, outcomeOf } from '../../scripts/ci/ci-outcome.mjs';
import { summaryObject } from '../../src/cli/run-command.js';
import { deliverTask } from '../../src/deliver/deliver-task.js';
import { readTaskJournal } from '../../src/lifecycle/task-journal-state.js';
import { Redaction } from '../../src/notes/redact.js';
import { validateConfig } from '../../src/config/load.js';
import { createFinishedTask } from '../support/finished-task.js';

describe('agent-runner-ci: the outcome of a run', () => {
  it("exit 6: the annotation says the delivery's reason and its fix, not the task's reason", async () => {
    const task = await createFinishedTask();
    const settings = validateConfig([{ source: 'test', values: { deliver: { pr: true } } }]).deliver;
    // No remote named origin: the delivery fails after a COMPLETE task (exit 6).
    const delivery = await deliverTask({
      repoRoot: task.repo.root,
      taskId: task.taskId,
      settings: { ...settings, push: true },
      env: {},
      redaction: new Redaction(),
    });
    expect(delivery.error?.message).toContain('has no remote "origin"');
    const finished = readTaskJournal(task.runDir, task.taskId)?.finished;
    if (!finished) throw new Error('no finished task');
    // As the script reads it: one JSON line of stdout.
    const summary = JSON.parse(JSON.stringify(summaryObject(finished, delivery))) as Record<string, unknown>;
    const message = messageOf({ summary, stderrTail: '', exitCode: 6 });
    expect(message).toMatch(/^agent-runner: COMPLETE, exit 6 \(delivery failed\): /);
    expect(message).toContain('has no remote "origin"');
    expect(message).toContain('deliver.remote');
    expect(message).not.toContain(finished.reason);
    expect(outcomeOf(6, 'fail')).toEqual({ exit: 6, level: 'error', outcome: 'delivery-failed' });
  });

  it("other exits: the summary's error, else its reason, else the last line on stderr", () => {
    const failed = {
      state: 'FAILED',
      reason: 'gave up',
      error: { code: 'docker_unavailable', message: 'no Docker' },
    };
    expect(messageOf({ summary: failed, stderrTail: '', exitCode: 4 })).toBe(
      'agent-runner: FAILED, exit 4: no Docker',
    );
    expect(
      messageOf({
        summary: { state: 'NEEDS_REVIEW', reason: 'asked', error: null },
        stderrTail: '',
        exitCode: 3,
      }),
    ).toBe('agent-runner: NEEDS_REVIEW, exit 3: asked');
    expect(
      messageOf({ summary: undefined, stderrTail: 'first\nagent-runner: bad config\n', exitCode: 2 }),
    ).toBe('agent-runner: no task, exit 2: agent-runner: bad config');
    expect(outcomeOf(3, 'neutral')).toEqual({ exit: 0, level: 'warning', outcome: 'needs-review' });
  });
});
