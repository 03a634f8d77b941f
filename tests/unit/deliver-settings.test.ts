/**
 * Delivery's settings (`deliver.*` with the flags over them) and the exit code a delivered task ends with.
 */
import { describe, expect, it } from 'vitest';
import { deliverySettings, exitCodeAfterDelivery } from '../../src/cli/deliver-command.js';
import { validateConfig } from '../../src/config/load.js';
import type { TaskSummary } from '../../src/core/types.js';
import type { DeliveryOutcome } from '../../src/deliver/delivery-record.js';

const failed: DeliveryOutcome = {
  pushed: false,
  url: null,
  error: { kind: 'rejected', message: 'refused' },
  skipped: null,
  branch: 'agent-runner/T',
  remote: null,
  sha: null,
  changeRequest: null,
};

describe('delivery settings', () => {
  it('defaults deliver nothing; --pr implies --push; --draft delivers any state', () => {
    const configured = validateConfig([]).deliver;
    expect(configured).toEqual({ push: false, pr: false, when: 'complete', remote: 'origin', forge: 'auto' });
    expect(deliverySettings(configured, { pr: true })).toMatchObject({ push: true, pr: true });
    expect(deliverySettings(configured, { draft: true }).when).toBe('always');
  });

  it('refuses a remote name that is not one and a forge it does not know', () => {
    expect(() =>
      validateConfig([{ source: 'agent-runner.yaml', values: { deliver: { remote: '--upload-pack=x' } } }]),
    ).toThrow(/deliver\.remote/);
    expect(() =>
      validateConfig([{ source: 'agent-runner.yaml', values: { deliver: { forge: 'bitbucket' } } }]),
    ).toThrow(/deliver\.forge/);
  });

  it("exit 6 only when the task was COMPLETE; otherwise the task's own code", () => {
    const summary = { state: 'COMPLETE', exitCode: 0 } as TaskSummary;
    expect(exitCodeAfterDelivery(summary, failed)).toBe(6);
    expect(exitCodeAfterDelivery(summary, { ...failed, error: null, pushed: true })).toBe(0);
    expect(exitCodeAfterDelivery({ state: 'NEEDS_REVIEW', exitCode: 3 } as TaskSummary, failed)).toBe(3);
    expect(exitCodeAfterDelivery(summary, null)).toBe(0);
  });
});
