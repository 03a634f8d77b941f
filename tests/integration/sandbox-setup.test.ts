/**
 * `sandbox.setup` in a real sandbox of the worker image, through the real gateway's allowlist proxy to the
 * real npm registry: `npm ci` of a generated lockfile project with a devDependency works (the home is
 * writable by the worker's uid), every command is reported, and a failed command is described by its own
 * error line with what to try.
 */
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import type { SetupCommandReport } from '../../src/core/events.js';
import { EnvironmentError } from '../../src/errors.js';
import { startTaskGateway } from '../../src/gateway/task-gateway.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { startGatewaySandbox, SANDBOX_UID } from '../support/gateway-sandbox.js';
import { writeNpmProject } from '../support/npm-project.js';
import { builtWorkerImage } from '../support/worker-image.js';

const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
let image = '';

beforeAll(async () => {
  image = await builtWorkerImage(docker);
});

function chownTree(dir: string): void {
  // The worker runs as SANDBOX_UID; the mounted project must be its own, as the runner arranges it.
  execChown(dir);
}

function execChown(dir: string): void {
  chownSync(dir, SANDBOX_UID, SANDBOX_UID);
  for (const name of ['package.json', 'package-lock.json'])
    if (existsSync(path.join(dir, name))) chownSync(path.join(dir, name), SANDBOX_UID, SANDBOX_UID);
}

async function setUp(dir: string, setup: string[]) {
  const config = validateConfig([{ source: 'test', values: { sandbox: { setup, setupTimeout: '4m' } } }]);
  const log: string[] = [];
  const taskGateway = await startTaskGateway({
    config,
    env: {},
    repoRoot: dir,
    onLog: (line) => log.push(line),
  });
  onTestFinished(() => taskGateway.close());
  expect(taskGateway.plan.setup).toEqual({ policy: 'allowlist', allowlist: ['registry.npmjs.org'] });
  const sandbox = await startGatewaySandbox(runtime, {
    image,
    gateway: taskGateway.gateway,
    plan: taskGateway.plan,
    mounts: [{ hostPath: dir, containerPath: '/workspace' }],
    workdir: '/workspace',
  });
  const reports: SetupCommandReport[] = [];
  const run = taskGateway.setup(runtime, sandbox.id, {
    workdir: '/workspace',
    onReport: (report) => reports.push(report),
  });
  return { sandbox, reports, run, log };
}

function projectDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'rp-setup-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('sandbox.setup', () => {
  it('npm ci installs devDependencies from the registry through the allowlist proxy, home owned by the worker', async () => {
    const dir = projectDir();
    writeNpmProject(dir, { devDependencies: { 'is-number': '7.0.0', 'left-pad': '1.3.0' } });
    chownTree(dir);
    const { sandbox, reports, run, log } = await setUp(dir, ['npm ci --no-audit --no-fund']);
    await run;
    // Through the gateway's registry route (kept-alive upstream connections), not a tunnel per request.
    expect(log).toContain('registry GET registry.npmjs.org -> 200');
    expect(log.filter((line) => line.startsWith('proxy CONNECT'))).toEqual([]);
    expect(existsSync(path.join(dir, 'node_modules', 'is-number', 'package.json'))).toBe(true);
    expect(existsSync(path.join(dir, 'node_modules', 'left-pad', 'package.json'))).toBe(true);
    // npm's cache went to the worker's own home.
    const home = await runtime.exec(
      sandbox.id,
      ['/bin/bash', '-c', 'stat -c "%u %a" "$HOME" && ls -d "$HOME/.npm/_cacache"'],
      { timeoutMs: 10_000 },
    );
    expect(home.stdoutTail).toBe(`${SANDBOX_UID} 755\n/home/agent/.npm/_cacache\n`);
    expect(reports.map((report) => [report.phase, report.index, report.exitCode])).toEqual([
      ['started', 1, undefined],
      ['finished', 1, 0],
    ]);
    expect(reports[1]?.policy).toBe('allowlist (registry.npmjs.org)');
    expect(reports[1]?.outputTail).toBeUndefined();
  });

  it('npm ci of a lockfile without resolved URLs goes through the registry route too', async () => {
    const dir = projectDir();
    writeNpmProject(dir, { devDependencies: { 'is-number': '7.0.0' }, omitResolved: true });
    expect(readFileSync(path.join(dir, 'package-lock.json'), 'utf8')).not.toContain('"resolved"');
    chownTree(dir);
    const { run, log } = await setUp(dir, ['npm ci --no-audit --no-fund']);
    await run;
    expect(existsSync(path.join(dir, 'node_modules', 'is-number', 'package.json'))).toBe(true);
    expect(log).toContain('registry GET registry.npmjs.org -> 200');
  });

  it('a failed command is told by its own error line and what to try, one line first', async () => {
    const dir = projectDir();
    writeNpmProject(dir, { devDependencies: { 'is-number': '7.0.0' } });
    // package.json now asks for something the lockfile does not have: npm ci refuses.
    writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'x', version: '1.0.0', devDependencies: { 'left-pad': '1.3.0' } }),
    );
    chownTree(dir);
    const { reports, run } = await setUp(dir, ['npm ci --no-audit --no-fund', 'echo never']);
    const error = await run.then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(EnvironmentError);
    const [first] = (error as Error).message.split('\n');
    expect(first).toMatch(
      /^sandbox\.setup command `npm ci --no-audit --no-fund` exited 1 under network policy allowlist \(registry\.npmjs\.org\): npm (ERR!|error) `npm ci` can only install packages when your package\.json and package-lock\.json/,
    );
    expect(first).toContain('Run the same command in a fresh clone');
    expect(first).not.toContain('setupNetwork');
    // Stops at the failure; the finished report carries the tail for the note.
    expect(reports.filter((report) => report.phase === 'finished')).toHaveLength(1);
    expect(reports[1]?.outputTail).toContain('npm ci');
  });
});
