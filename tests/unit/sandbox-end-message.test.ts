import { describe, expect, it } from 'vitest';
import type { SandboxEnd } from '../../src/core/ports.js';
import { sandboxEndMessage } from '../../src/lifecycle/sandbox-end-message.js';

const end = (overrides: Partial<SandboxEnd>): SandboxEnd => ({
  state: 'exited',
  exitCode: 0,
  error: '',
  oomKilled: false,
  runtime: 'runc',
  ...overrides,
});

describe('sandboxEndMessage', () => {
  it.each([
    ['removed', null, 'was removed from outside agent-runner'],
    [
      'docker kill',
      end({ exitCode: 137 }),
      'was stopped (exited, exit status 137, runtime runc) from outside',
    ],
    [
      'docker stop',
      end({ exitCode: 143, runtime: 'runsc' }),
      'was stopped (exited, exit status 143, runtime runsc) from outside',
    ],
    [
      'a state other than exited',
      end({ state: 'dead', exitCode: 2 }),
      'was stopped (dead, exit status 2, runtime runc) from outside',
    ],
    ['a runtime that cannot say the status', end({ exitCode: -1 }), 'was stopped (exited) from outside'],
    [
      'out of memory',
      end({ exitCode: 137, oomKilled: true }),
      'ran out of memory and the kernel ended it (exited, exit status 137',
    ],
    [
      'gVisor panicked',
      end({ exitCode: 2, runtime: 'runsc' }),
      "died by itself (exited, exit status 2, runtime runsc): gVisor's sandbox ended",
    ],
    [
      'runc init ended',
      end({ exitCode: 3 }),
      'died by itself (exited, exit status 3, runtime runc): its init ended',
    ],
  ])('%s', (_name, recorded, expected) => {
    const message = sandboxEndMessage('T-1', recorded);
    expect(message).toContain(expected);
    expect(message).toContain('agent-runner resume T-1');
    expect(message).toContain('.agent-runner/sandboxes/T-1/repo');
  });

  it('only a signal or an unknown status is blamed on someone outside', () => {
    expect(sandboxEndMessage('T-1', end({ exitCode: 2, runtime: 'runsc' }))).not.toContain('from outside');
    expect(sandboxEndMessage('T-1', end({ exitCode: 2, runtime: 'runsc' }))).toContain('--runtime runc');
    expect(sandboxEndMessage('T-1', end({ exitCode: 3 }))).not.toContain('from outside');
  });

  it("keeps the engine's error on one bounded line", () => {
    const message = sandboxEndMessage(
      'T-1',
      end({ exitCode: 2, runtime: 'runsc', error: `shim\ndisconnected ${'x'.repeat(500)}` }),
    );
    expect(message).toContain('engine error: shim disconnected xxx');
    expect(message).not.toContain('x'.repeat(301));
  });
});
