/**
 * A real lockfile project of a few hundred packages installs with `npm ci` under the default set-up policy
 * (allowlist of the detected registry, npm through the gateway's registry route) and the default gateway
 * limits: npm opens many connections at once, and the connection cap must queue them, not drop them.
 * The lockfile is resolved from the npm registry in the set-up; `npm ci` runs with a cold cache.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ModelGateway } from '../../src/gateway/model-gateway.js';
import { detectPackageRegistries } from '../../src/gateway/package-registries.js';
import { planSandboxNetwork, prepareSandboxNetwork } from '../../src/gateway/sandbox-network.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { startGatewaySandbox } from '../support/gateway-sandbox.js';
import { writeNpmProject } from '../support/npm-project.js';
import { builtWorkerImage } from '../support/worker-image.js';

const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
let projectDir = '';
let lockedPackages = 0;

beforeAll(() => {
  projectDir = mkdtempSync(path.join(tmpdir(), 'gw-npm-install-'));
  // eslint 8 and jest 29: about 340 packages, the size of a small real library's lockfile.
  writeNpmProject(projectDir, {
    name: 'gw-npm-install',
    devDependencies: { eslint: '8.57.0', jest: '29.7.0' },
  });
  const lock = JSON.parse(readFileSync(path.join(projectDir, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, unknown>;
  };
  lockedPackages = Object.keys(lock.packages).length - 1;
  // The sandbox's uid writes node_modules into the mounted project.
  chmodSync(projectDir, 0o777);
  return () => rmSync(projectDir, { recursive: true, force: true });
}, 240_000);

describe('npm ci of a real lockfile project through the gateway', () => {
  it('installs several hundred packages under the default policy and limits; no connection is dropped', async () => {
    // The probe: the lockfile really holds several hundred packages.
    expect(lockedPackages).toBeGreaterThanOrEqual(300);
    const log: string[] = [];
    const gateway = await ModelGateway.start({
      worker: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: undefined },
      onLog: (line) => log.push(line),
    });
    onTestFinished(() => gateway.close());
    const registries = await detectPackageRegistries(projectDir);
    const plan = planSandboxNetwork({ network: 'gateway-only', allowlist: [] }, registries);
    expect(plan.setup).toEqual({ policy: 'allowlist', allowlist: ['registry.npmjs.org'] });
    const sandbox = await startGatewaySandbox(runtime, {
      image: await builtWorkerImage(docker),
      gateway,
      plan,
      mounts: [{ hostPath: projectDir, containerPath: '/workspace' }],
      workdir: '/workspace',
    });
    const began = Date.now();
    const [setup] = await prepareSandboxNetwork(runtime, sandbox.id, gateway, plan, {
      setup: ['npm ci --no-audit --no-fund --cache /tmp/npm-cache'],
      workdir: '/workspace',
      timeoutMs: 600_000,
    });
    const seconds = Math.round((Date.now() - began) / 1000);
    const registryRequests = log.filter((line) => line.startsWith('registry ')).length;
    const peak = gateway.connectionPeak;
    console.log(
      `npm ci: ${lockedPackages} packages, ${registryRequests} registry requests, ${seconds} s, at most ${peak.active} connections served and ${peak.waiting} waiting at once`,
    );
    const dropped = log.filter((line) => /dropped|gave up waiting/.test(line));
    expect(setup?.result.exitCode, `${setup?.result.stderrTail}\n${dropped.join('\n')}`).toBe(0);
    expect(existsSync(path.join(projectDir, 'node_modules', 'jest', 'package.json'))).toBe(true);
    expect(existsSync(path.join(projectDir, 'node_modules', 'eslint', 'package.json'))).toBe(true);
    // Every tarball came through the registry route (the lockfile's few packages for other systems, such as
    // fsevents, are skipped), and the gateway dropped none of npm's connections.
    expect(registryRequests).toBeGreaterThanOrEqual(300);
    expect(dropped).toEqual([]);
  }, 900_000);
});
