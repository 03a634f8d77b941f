import { guardIdsFor, keeperIdsFor } from '../../src/workspace/scope/permissions.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { SandboxOwner } from '../../src/sandbox/container-options.js';
import { containerCreateOptions } from '../../src/sandbox/container-options.js';
import { UserError } from '../../src/errors.js';
import { isHostAllowed, normalizeAllowlist } from '../../src/gateway/domain-allowlist.js';
import { detectPackageRegistries } from '../../src/gateway/package-registries.js';
import { relayKeeper } from '../../src/gateway/relay-script.js';
import { planSandboxNetwork, proxyEnv } from '../../src/gateway/sandbox-network.js';
import { ResponsesUsageMeter } from '../../src/gateway/sse-usage.js';

describe('domain allowlist', () => {
  const list = normalizeAllowlist(['Registry.NPMJS.org.', '*.example.com', '10.1.2.3']);
  it.each([
    ['registry.npmjs.org', true],
    ['REGISTRY.npmjs.org', true],
    ['evil-registry.npmjs.org', false],
    ['registry.npmjs.org.evil.com', false],
    ['a.example.com', true],
    ['a.b.example.com', true],
    ['example.com', false],
    ['badexample.com', false],
    ['10.1.2.3', true],
    ['10.1.2.4', false],
  ])('%s -> %s', (host, allowed) => {
    expect(isHostAllowed(host, list)).toBe(allowed);
  });

  it.each(['https://registry.npmjs.org', 'registry.npmjs.org/path', 'host:443', '*', ''])(
    'refuses "%s" with the fix',
    (entry) => {
      expect(() => normalizeAllowlist([entry])).toThrow(UserError);
      expect(() => normalizeAllowlist([entry])).toThrow(/sandbox.allowlist\[0\].*no scheme, path or port/);
    },
  );
});

describe('ResponsesUsageMeter', () => {
  it('finds response.completed usage even when an event is split across chunks', () => {
    const meter = new ResponsesUsageMeter();
    const stream =
      'data: {"type":"response.created"}\n\n' +
      'data: {"type":"response.completed","response":{"usage":{"input_tokens":11,"input_tokens_details":{"cached_tokens":4},' +
      '"output_tokens":6,"output_tokens_details":{"reasoning_tokens":1}}}}\r\n\r\n';
    for (let index = 0; index < stream.length; index += 7)
      meter.push(Buffer.from(stream.slice(index, index + 7)));
    expect(meter.end()).toEqual({
      inputTokens: 11,
      cachedInputTokens: 4,
      outputTokens: 6,
      reasoningTokens: 1,
    });
  });

  it('reports null for a stream without response.completed', () => {
    const meter = new ResponsesUsageMeter();
    meter.push('data: {"type":"response.failed"}\n\ndata: not json response.completed\n\n');
    expect(meter.end()).toBeNull();
  });
});

describe('planSandboxNetwork', () => {
  it('defaults the setup phase to an allowlist of the configured hosts plus the detected registries', () => {
    expect(
      planSandboxNetwork({ network: 'gateway-only', allowlist: ['x.org'] }, ['registry.npmjs.org']),
    ).toEqual({
      create: { mode: 'none' },
      setup: { policy: 'allowlist', allowlist: ['x.org', 'registry.npmjs.org'] },
      worker: { policy: 'gateway-only', allowlist: [] },
    });
  });

  it.each([
    ['open', 'gateway-only', 'bridge'],
    ['gateway-only', 'open', 'bridge'],
    ['allowlist', 'allowlist', 'none'],
    ['gateway-only', 'gateway-only', 'none'],
  ] as const)('setup %s + worker %s is created on %s', (setupNetwork, network, mode) => {
    expect(planSandboxNetwork({ network, setupNetwork, allowlist: [] }, []).create).toEqual({ mode });
  });

  it('gives tools the proxy through the environment, and never for the gateway itself', () => {
    expect(proxyEnv()).toMatchObject({
      HTTPS_PROXY: 'http://127.0.0.1:8787',
      http_proxy: 'http://127.0.0.1:8787',
      NO_PROXY: '127.0.0.1,localhost',
    });
  });
});

describe('detectPackageRegistries', () => {
  it('reads manifests and .npmrc registries at the repository root', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gw-registries-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(path.join(dir, 'package.json'), '{}');
    writeFileSync(path.join(dir, 'requirements.txt'), '');
    writeFileSync(path.join(dir, '.npmrc'), '@corp:registry=https://npm.corp.example/\n');
    return expect(detectPackageRegistries(dir)).resolves.toEqual([
      'files.pythonhosted.org',
      'npm.corp.example',
      'pypi.org',
      'registry.npmjs.org',
    ]);
  });
});

describe('keeper in the container options', () => {
  const owner: SandboxOwner = { version: '0', pid: 1, hostname: 'h' };
  const spec = {
    taskId: 't',
    repoPath: '/r',
    image: 'i',
    user: { uid: 1000, gid: 1000 },
    mounts: [],
    workdir: '/w',
    env: {},
    limits: { cpus: 1, memoryBytes: 1e9, pids: 10 },
    network: { mode: 'none' as const },
  };
  it('keeps sleep infinity by default and runs the relay keeper when given', () => {
    expect(containerCreateOptions(spec, owner, [])).toMatchObject({
      Entrypoint: ['sleep'],
      Cmd: ['infinity'],
    });
    const keeper = relayKeeper();
    expect(containerCreateOptions({ ...spec, keeper }, owner, [])).toMatchObject({
      Entrypoint: keeper,
      Cmd: [],
    });
    expect(keeper.join(' ')).toContain(
      'node /run/agent-runner/relay.cjs /run/agent-runner/gateway.sock 8787',
    );
  });

  it('runs the init, keeper and relay as a uid of their own; every exec is told the worker user', () => {
    const options = containerCreateOptions({ ...spec, keeper: relayKeeper() }, owner, []);
    expect(options.User).toBe('10004:10004');
    expect(options.Labels?.['agent-runner.user']).toBe('1000:1000');
    // Never the worker's nor the guard's uid, whichever the worker has.
    for (const uid of [10001, 10002, 10003, 10004, 10005]) {
      const keeperUid = keeperIdsFor({ uid, gid: uid }).uid;
      expect(keeperUid).not.toBe(uid);
      expect(keeperUid).not.toBe(guardIdsFor({ uid, gid: uid }).uid);
    }
  });
});
