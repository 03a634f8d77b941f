/**
 * Claude Code and Gemini CLI, each the only worker: a secret it printed is in nothing agent-runner keeps, its
 * redacted state still resumes, and the recorded run replays with no upstream (tests/support/redaction-worker-case.ts).
 */
import { describe, it } from 'vitest';
import { redactedRunResumedAndReplayed } from '../support/redaction-worker-case.js';

describe.each([
  { worker: 'claude', model: 'claude-sonnet-4-5', workers: '', replay: true },
  { worker: 'gemini', model: 'gemini-2.5-pro', workers: '', replay: true },
])('$worker as the only worker, printing a redacted value', (workerCase) => {
  it('ends COMPLETE; the value is in nothing kept, the state resumes, and the recorded run replays', async () => {
    await redactedRunResumedAndReplayed(workerCase);
  }, 300_000);
});
