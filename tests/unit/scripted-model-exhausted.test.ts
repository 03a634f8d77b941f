import { describe, expect, it, onTestFinished } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { startScriptedModelServer } from '../../src/demo/scripted-model-server.js';
import { createOpenAiChatModel } from '../../src/meta/openai-chat-model.js';

describe('a --model-script that runs out', () => {
  it('says so, once, without retries or "try again later"', async () => {
    const server = await startScriptedModelServer({ meta: ['type: x'], worker: [] });
    onTestFinished(() => server.close());
    const config = validateConfig([
      { source: 't', values: { meta: { baseUrl: server.baseUrl, maxRetries: 3 } } },
    ]);
    const model = createOpenAiChatModel(config, { OPENAI_API_KEY: 'scripted' });
    await model.complete([{ role: 'user', content: 'first' }]);
    const error = await model.complete([{ role: 'user', content: 'second' }]).then(
      () => null,
      (caught: unknown) => caught as Error,
    );
    expect(error?.message).toContain(
      'the model script (--model-script) ran out: all 1 Meta-agent replies were used and the task asked for another',
    );
    expect(error?.message).not.toMatch(/try again later/i);
    expect(server.remaining()).toEqual({ meta: 0, worker: 0 });
  });
});
