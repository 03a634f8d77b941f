/**
 * Qwen Code and OpenCode over Chat Completions, each the only worker: a secret it printed is in nothing
 * agent-runner keeps, its redacted state (qwen's chats, opencode's SQLite database) still resumes
 * (tests/support/redaction-worker-case.ts; the replay of a recorded run is shown with claude and gemini).
 */
import { describe, it } from 'vitest';
import { redactedRunResumedAndReplayed } from '../support/redaction-worker-case.js';

const CHAT = (worker: string) => `workers:\n  ${worker}:\n    api: chat\n`;

describe.each([
  { worker: 'qwen', model: 'gpt-5.5', workers: CHAT('qwen'), replay: false },
  { worker: 'opencode', model: 'gpt-5.5', workers: CHAT('opencode'), replay: false },
])('$worker over chat as the only worker, printing a redacted value', (workerCase) => {
  it('ends COMPLETE; the value is in nothing kept, and the redacted state resumes', async () => {
    await redactedRunResumedAndReplayed(workerCase);
  }, 300_000);
});
