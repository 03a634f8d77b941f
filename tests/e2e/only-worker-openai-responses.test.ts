/** The demo with qwen or opencode over responses as the only worker (AGENT_RUNNER_WORKER). */
import { describe, it } from 'vitest';
import { demoWithOnlyWorker } from '../support/only-worker-demo.js';

describe('the demo with an OpenAI-API worker as the only one, over responses', () => {
  it.each([
    ['qwen', 'gpt-5.5', 'responses'],
    ['opencode', 'gpt-5.5', 'responses'],
  ])(
    'the demo with %s (%s over %s) as the only worker (AGENT_RUNNER_WORKER) ends COMPLETE',
    demoWithOnlyWorker,
    300_000,
  );
});
