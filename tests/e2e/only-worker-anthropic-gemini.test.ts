/**
 * The demo as a user with only an Anthropic or only a Gemini key runs it: claude or gemini as the only worker,
 * its image built on demand; and each recorded, then replayed with no upstream.
 */
import { describe, it } from 'vitest';
import { demoWithOnlyWorker, recordAndReplayWorker } from '../support/only-worker-demo.js';

describe('the demo with one worker beside codex as the only one', () => {
  it.each([
    ['claude', 'claude-sonnet-4-5', 'anthropic'],
    ['gemini', 'gemini-2.5-pro', 'gemini'],
  ])(
    'the demo with %s (%s over %s) as the only worker (AGENT_RUNNER_WORKER) ends COMPLETE',
    demoWithOnlyWorker,
    300_000,
  );

  it.each(['claude', 'gemini'])(
    'a %s run is recorded and replayed with no upstream: COMPLETE again, the same work',
    recordAndReplayWorker,
    300_000,
  );
});
