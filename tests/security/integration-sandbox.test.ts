/**
 * The project's integration sandbox serves every combined check, brought to each head in place, and no check's
 * code steers a later check (real Docker, the real worker image, a real `npm ci` from the registry through the
 * set-up's allowlist, the real gateway's set-up, the real checks). The project's DoD is `bash check.sh`, which
 * asks the installed `is-number` whether `src/value.txt` holds a number.
 *
 * - A check of one head poisons the installed dependency (`is-number` answers yes to anything), leaves a process
 *   that rewrites the value, a file in the tree and one in `/tmp`. The probe first shows the poison works in
 *   that sandbox; the next head's check (a value that is no number) then runs in a fresh sandbox, says why, and
 *   fails for real.
 * - A check that only adds a tool's cache under `node_modules/` keeps the sandbox (the same container, no second
 *   set-up); the cache, the tree's leftovers and `/tmp`'s are gone before the next check.
 * - A head that changes `package.json` gets a fresh sandbox (its set-up reads it).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import type { IntegrationSandbox } from '../../src/parallel/integration-sandbox.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { createTempRepo, type TempRepo } from '../support/git-repo.js';
import { writeNpmProject } from '../support/npm-project.js';
import { taskContainers } from '../support/task-containers.js';
import { builtWorkerImage } from '../support/worker-image.js';
import { startIntegrationSandbox } from '../support/integration-sandbox.js';
import { bashAsWorker } from '../support/sandbox-exec.js';

const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
let image: string;
const projects: { id: string; root: string }[] = [];
// Kept until afterAll: a container lookup names its repository, which must still be there.
const repos: { cleanup(): Promise<void> }[] = [];

beforeAll(async () => {
  image = await builtWorkerImage(docker);
}, 600_000);

afterAll(async () => {
  try {
    for (const project of projects)
      expect(await taskContainers(`${project.id}--integration`, project.root)).toEqual([]);
  } finally {
    for (const repo of repos) await repo.cleanup();
  }
});

const CHECK_JS = `const isNumber = require('is-number');
const value = require('node:fs').readFileSync('src/value.txt', 'utf8').trim();
if (!isNumber(value)) { console.log('not a number: ' + value); process.exit(1); }
console.log('a number: ' + value);
`;

async function project(): Promise<{ repo: TempRepo; sandbox: IntegrationSandbox; id: string }> {
  const repo = await createTempRepo({}, { prefix: 'ar-integration-', autoCleanup: false });
  repos.push(repo);
  writeNpmProject(repo.root, { devDependencies: { 'is-number': '7.0.0' } });
  await repo.commit('base', {
    '.gitignore': 'node_modules/\n.agent-runner/\n',
    // Read-only in a task's sandbox; in the integration sandbox no worker runs, so nothing is.
    'agent-runner.yaml': 'parallel:\n  max: 2\n',
    'check.js': CHECK_JS,
    'check.sh': 'node check.js\n',
    'src/value.txt': '1\n',
  });
  const values = {
    sandbox: { setup: ['npm ci --no-audit --no-fund'], setupTimeout: '4m' },
    dod: { checks: [{ name: 'test', command: 'bash check.sh' }], baseline: 'off' },
  };
  const config = validateConfig([{ source: 'test', values }]);
  const { sandbox, id } = await startIntegrationSandbox({
    runtime,
    repoRoot: repo.root,
    config,
    image,
    setup: ['npm ci --no-audit --no-fund'],
    prefix: 'integ',
  });
  projects.push({ id, root: repo.root });
  return { repo, sandbox, id };
}

async function containerOf(id: string, root: string): Promise<string> {
  const [container, more] = (await taskContainers(`${id}--integration`, root)).filter(
    (info) => info.State === 'running',
  );
  expect(more).toBeUndefined();
  return container!.Id;
}

async function inSandbox(containerId: string, script: string) {
  return bashAsWorker(containerId, script, { runtime, workdir: '/workspace' });
}

describe('the integration sandbox against a hostile check', () => {
  it("a check's poisoned dependency, process and files do not reach the next check: a fresh sandbox, and the truth", async () => {
    const { repo, sandbox, id } = await project();
    const poison = [
      "echo 'module.exports = () => true;' > node_modules/is-number/index.js",
      "setsid bash -c 'while true; do echo 7 > src/value.txt 2>/dev/null; sleep 0.05; done' >/dev/null 2>&1 < /dev/null &",
      'echo planted > src/planted.txt; echo planted > /tmp/planted',
      'node check.js',
    ].join('\n');
    const first = await repo.commit('a head whose check poisons', { 'check.sh': poison });
    const poisoned = await sandbox.check(first, 'alpha', []);
    // It ran (the process it left rewrote a tracked file while it ran: that check is red of its own).
    expect(poisoned.dod.results).toHaveLength(1);
    expect(poisoned.sandbox).toEqual({ reused: true });
    // The probe: the poison is in the sandbox and works (a value that is no number passes).
    const container = await containerOf(id, repo.root);
    const probe = await inSandbox(
      container,
      "cat node_modules/is-number/index.js; echo x > /tmp/value; node -e \"console.log(require('is-number')('x'))\"",
    );
    expect(probe.stdoutTail).toContain('() => true');
    expect(probe.stdoutTail.trim().endsWith('true')).toBe(true);

    const second = await repo.commit('a head that is wrong', {
      'check.sh': 'node check.js\n',
      'src/value.txt': 'broken\n',
    });
    const honest = await sandbox.check(second, 'alpha, beta', []);
    expect(honest.sandbox?.reused).toBe(false);
    expect(honest.sandbox?.reason).toMatch(
      /^set-up output changed since the set-up: .*node_modules\/is-number\/index\.js$/,
    );
    expect(honest.dod.status).toBe('failed');
    expect(honest.dod.results[0]?.outputTail).toContain('not a number: broken');
    expect(honest.headSha).toBe(second);
    const fresh = await containerOf(id, repo.root);
    expect(fresh).not.toBe(container);
    const leftovers = await inSandbox(
      fresh,
      'ls src; ls /tmp; echo "processes: $(ps -eo args | grep -c "[w]hile true")"',
    );
    expect(leftovers.stdoutTail).not.toContain('planted');
    expect(leftovers.stdoutTail).toContain('processes: 0');
  }, 300_000);

  it("a check that adds only a tool's cache keeps the sandbox: same container, no second set-up, nothing of the check left", async () => {
    const { repo, sandbox, id } = await project();
    const leaves = [
      'mkdir -p node_modules/.cache/tool && echo cached > node_modules/.cache/tool/result.json',
      'echo leftover > src/leftover.txt; echo leftover > /tmp/leftover; mkdir -p build && echo x > build/out',
      'echo "# planted" >> .git/config; echo "#!/bin/sh" > .git/hooks/post-checkout; ln -s /tmp/leftover src/link',
      'node check.js',
    ].join('\n');
    const first = await repo.commit('a head whose check writes a cache', { 'check.sh': leaves });
    expect((await sandbox.check(first, 'alpha', [])).dod.status).toBe('passed');
    const container = await containerOf(id, repo.root);
    const before = await inSandbox(
      container,
      'ls node_modules/.cache/tool src /tmp .git/hooks; grep -c planted .git/config',
    );
    for (const planted of ['result.json', 'leftover', 'post-checkout', 'link'])
      expect(before.stdoutTail).toContain(planted);
    expect(before.stdoutTail).toMatch(/^1$/m);

    const second = await repo.commit('the next head', {
      'check.sh':
        'ls -a src node_modules/.cache /tmp build .git/hooks 2>&1; grep -c planted .git/config; node check.js\n',
      'src/value.txt': '42\n',
    });
    const check = await sandbox.check(second, 'alpha, beta', []);
    expect(check.sandbox).toEqual({ reused: true });
    expect(check.dod.status).toBe('passed');
    const output = check.dod.results[0]?.outputTail ?? '';
    expect(output).toContain('a number: 42');
    expect(output).not.toContain('leftover');
    expect(output).not.toContain('result.json');
    expect(output).toContain("cannot access 'build'");
    expect(output).not.toContain('post-checkout');
    expect(output).not.toContain('link');
    expect(output).toMatch(/^0$/m);
    expect(await containerOf(id, repo.root)).toBe(container);
    // The tree is the head's, `.git` included (its history starts at the head's snapshot).
    const tree = await inSandbox(
      container,
      'git -c safe.directory=/workspace status --porcelain | wc -l; git -c safe.directory=/workspace rev-list --count HEAD',
    );
    expect(tree.stdoutTail.trim().split('\n')).toEqual(['0', '1']);
  }, 300_000);

  it('a head that changes what the set-up reads gets a fresh sandbox set up on it', async () => {
    const { repo, sandbox, id } = await project();
    const first = await repo.commit('first', { 'src/value.txt': '2\n' });
    expect((await sandbox.check(first, 'alpha', [])).sandbox).toEqual({ reused: true });
    const container = await containerOf(id, repo.root);
    const manifest = JSON.parse(await readFile(path.join(repo.root, 'package.json'), 'utf8')) as object;
    const second = await repo.commit('description', {
      'package.json': `${JSON.stringify({ ...manifest, description: 'changed' }, null, 2)}\n`,
    });
    const check = await sandbox.check(second, 'alpha, beta', []);
    expect(check.sandbox).toEqual({
      reused: false,
      reason: 'the head changed package.json, which the set-up reads',
    });
    expect(check.dod.status).toBe('passed');
    expect(await containerOf(id, repo.root)).not.toBe(container);
  }, 300_000);
});
