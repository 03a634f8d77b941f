/** The demo with qwen or opencode over chat as the only worker (AGENT_RUNNER_WORKER). */
import { describe, it } from 'vitest';
import { demoWithOnlyWorker } from '../support/only-worker-demo.js';

describe('the demo with an OpenAI-API worker as the only one, over chat', () => {
  it.each([
    ['qwen', 'gpt-5.5', 'chat'],
    ['opencode', 'gpt-5.5', 'chat'],
  ])(
    'the demo with %s (%s over %s) as the only worker (AGENT_RUNNER_WORKER) ends COMPLETE',
    demoWithOnlyWorker,
    300_000,
  );
});
