import { describe, expect, it } from 'vitest';
import { environmentLayer, validateConfig } from '../../src/config/load.js';
import type { SandboxSpec } from '../../src/core/ports.js';
import { EnvironmentError, UserError } from '../../src/errors.js';
import { containerCreateOptions } from '../../src/sandbox/container-options.js';
import {
  chooseContainerRuntime,
  runscProblem,
  type EngineRuntimes,
  type RuntimeRequest,
} from '../../src/sandbox/container-runtime.js';
import { flagsLayer } from '../../src/cli/run-flags.js';

const REGISTERED: EngineRuntimes = {
  runc: {},
  runsc: { runtimeArgs: ['--network=none', '--host-uds=all'] },
};
const request = (overrides: Partial<RuntimeRequest>): RuntimeRequest => ({
  runtime: 'auto',
  network: 'gateway-only',
  ...overrides,
});

describe('sandbox.runtime: the choice', () => {
  it('auto takes runsc where the engine has it registered as agent-runner needs', () => {
    expect(chooseContainerRuntime(request({}), REGISTERED)).toEqual({
      runtime: 'runsc',
      reason: 'sandbox.runtime: auto, and runsc is registered with the Docker engine',
    });
  });

  it.each([
    [{ runc: {} }, /auto, and runsc is not registered with the Docker engine$/],
    [{ runsc: {} }, /without --network=none and --host-uds=all in its runtimeArgs/],
    [{ runsc: { runtimeArgs: ['--network=none'] } }, /without --host-uds=all in its runtimeArgs/],
  ] as [EngineRuntimes, RegExp][])('auto falls back to runc and says why: %j', (engine, why) => {
    const choice = chooseContainerRuntime(request({}), engine);
    expect(choice.runtime).toBe('runc');
    expect(choice.reason).toMatch(why);
  });

  it.each(['network', 'setupNetwork'] as const)('auto with an open %s runs under runc and says so', (key) => {
    const choice = chooseContainerRuntime(request({ [key]: 'open' }), REGISTERED);
    expect(choice).toEqual({
      runtime: 'runc',
      reason: `sandbox.runtime: auto, and sandbox.${key} is open, which needs the container's own network (a runsc sandbox has loopback only)`,
    });
  });

  it('runc is taken as asked, whatever the engine offers', () => {
    expect(chooseContainerRuntime(request({ runtime: 'runc' }), REGISTERED)).toEqual({
      runtime: 'runc',
      reason: 'sandbox.runtime: runc',
    });
  });

  it('runsc asked of an engine that cannot give it is one error with the fix (exit 4), never a silent runc', () => {
    const error = (() => {
      try {
        chooseContainerRuntime(request({ runtime: 'runsc' }), { runc: {} });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(EnvironmentError);
    expect((error as EnvironmentError).exitCode).toBe(4);
    expect((error as EnvironmentError).message).toMatch(
      /^sandbox\.runtime is runsc, but runsc is not registered with the Docker engine: register it with `sudo bash scripts\/ensure-runsc\.sh`.*or set sandbox\.runtime: runc \(or auto\)\.$/,
    );
    expect(runscProblem(REGISTERED)).toBeNull();
  });
});

describe('sandbox.runtime: the configuration', () => {
  it('defaults to auto (runsc where registered) and is set by the file, AGENT_RUNNER_RUNTIME and --runtime (flags win)', () => {
    expect(validateConfig([]).sandbox.runtime).toBe('auto');
    const file = { source: 'file', values: { sandbox: { runtime: 'runc' } } };
    expect(validateConfig([file]).sandbox.runtime).toBe('runc');
    const env = environmentLayer({ AGENT_RUNNER_RUNTIME: 'runsc' });
    expect(validateConfig([file, env]).sandbox.runtime).toBe('runsc');
    const flags = { source: 'command-line flags', values: flagsLayer({ runtime: 'runc' }) };
    expect(validateConfig([file, env, flags]).sandbox.runtime).toBe('runc');
  });

  it('refuses an unknown runtime and runsc with an open phase, naming the key and the fix', () => {
    const invalid = (values: Record<string, unknown>) => {
      try {
        validateConfig([{ source: 'agent-runner.yaml', values }]);
      } catch (error) {
        expect(error).toBeInstanceOf(UserError);
        return (error as UserError).message;
      }
      throw new Error('accepted');
    };
    expect(invalid({ sandbox: { runtime: 'kata' } })).toMatch(/sandbox\.runtime: .*"runc"\|"runsc"\|"auto"/);
    expect(invalid({ sandbox: { runtime: 'runsc', setupNetwork: 'open' } })).toMatch(
      /sandbox\.setupNetwork: open needs the container's own network, which a runsc sandbox lacks .*use allowlist, or sandbox\.runtime: runc \(in agent-runner\.yaml\)/,
    );
    expect(
      validateConfig([{ source: 'f', values: { sandbox: { runtime: 'auto', network: 'open' } } }]).sandbox
        .network,
    ).toBe('open');
  });
});

describe('the container asks the engine for the chosen runtime', () => {
  const spec: SandboxSpec = {
    taskId: 'T-1',
    repoPath: '/repo',
    image: 'img',
    user: { uid: 10001, gid: 10001 },
    mounts: [],
    workdir: '/workspace',
    env: {},
    limits: { cpus: 1, memoryBytes: 1024 ** 3, pids: 64 },
    network: { mode: 'none' },
  };
  const owner = { version: '0', pid: 1, hostname: 'h' };

  it('HostConfig.Runtime is the spec runtime, and absent (the engine default) when none is named', () => {
    expect(containerCreateOptions({ ...spec, runtime: 'runsc' }, owner, []).HostConfig?.Runtime).toBe(
      'runsc',
    );
    expect(containerCreateOptions({ ...spec, runtime: 'runc' }, owner, []).HostConfig?.Runtime).toBe('runc');
    expect(containerCreateOptions(spec, owner, []).HostConfig).not.toHaveProperty('Runtime');
  });
});
