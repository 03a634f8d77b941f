import { describe, expect, it } from 'vitest';
import { StallCounter, stallDescription } from '../../src/core/stall.js';
import type { MetaDecision } from '../../src/core/types.js';

const decide = (prompt: string): MetaDecision => ({
  action: 'run_worker',
  reason: 'work',
  usedPatterns: [],
  workerCall: { workerType: 'codex', mode: 'exec', prompt },
});

describe('stall detection', () => {
  it('counts the same decision on the same evidence with the same refusals in a row', () => {
    const stalls = new StallCounter();
    expect(stalls.observe(decide('fix it'), 'e1', ['tests fail'])).toBe(1);
    expect(stalls.observe(decide('fix it'), 'e1', ['tests fail'])).toBe(2);
    expect(stalls.observe(decide('fix it'), 'e1', ['tests fail'])).toBe(3);
  });

  it.each([
    ['another instruction', decide('try again'), 'e1', ['tests fail']],
    ['new evidence', decide('fix it'), 'e2', ['tests fail']],
    ['another refusal', decide('fix it'), 'e1', ['lint fails']],
  ])('starts over on %s', (_name, decision, evidence, refusals) => {
    const stalls = new StallCounter();
    stalls.observe(decide('fix it'), 'e1', ['tests fail']);
    stalls.observe(decide('fix it'), 'e1', ['tests fail']);
    expect(stalls.observe(decision, evidence, refusals)).toBe(1);
  });

  it('says what repeated, with the refusals', () => {
    expect(stallDescription(decide('x'), 3, ['a', 'b'])).toBe(
      'the Meta-agent decided run_worker 3 times in a row with no change in the facts (each time: a; b)',
    );
    expect(stallDescription({ ...decide('x'), action: 'mark_complete' }, 3, [])).toBe(
      'the Meta-agent decided mark_complete 3 times in a row with no change in the facts',
    );
  });
});
