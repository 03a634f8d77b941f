/**
 * The worker image's statx shim (image/statx-shim.c, named in /etc/ld.so.preload) under both runtimes. The runsc
 * that scripts/ensure-runsc.sh installs (20240729) answers lgetxattr of a link's `security.selinux` with EBADF:
 * without the shim `ls -l` prints "Bad file descriptor" for every symbolic link (Debian bookworm's own 20221219
 * refused statx with AT_NO_AUTOMOUNT instead, the shim's other half). In one hardened sandbox per runtime, as
 * the worker: the tools an agent runs first (`ls -l` over a link, `ls DIR`, `stat`, `find`, `git status`, node's
 * fs.stat, `npm test`) all work, the shim is loaded, and raw system calls (perl's syscall, which no preload can
 * touch) show what the kernel itself answers: EBADF under runsc, so the shim is what makes `ls -l` work there,
 * and the kernel's own answer under runc, where the shim changes nothing.
 */
import { randomUUID } from 'node:crypto';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ContainerRuntime } from '../../src/core/records.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { bashAsWorker } from '../support/sandbox-exec.js';
import { builtWorkerImage } from '../support/worker-image.js';

const UID = 10001;
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
let image = '';
let scratch = '';

beforeAll(async () => {
  image = await builtWorkerImage(docker);
  scratch = await mkdtemp(path.join(tmpdir(), 'agent-runner-statx-'));
}, 600_000);

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/**
 * statx(AT_FDCWD, "/", flags, STATX_BASIC_STATS | STATX_BTIME, buffer) and lgetxattr("src/link",
 * "security.selinux") straight to the kernel: `ok` (or the attribute's length) or errno.
 */
const RAW_CALLS = String.raw`
my ($path, $buffer) = ("/", "\0" x 256);
for my $flags (0x800, 0) {
  my $result = syscall(332, -100, $path, $flags, 0xfff, $buffer);
  printf "raw-statx-%x=%s\n", $flags, $result == 0 ? "ok" : $! + 0;
}
my ($link, $name, $value) = ("src/link", "security.selinux", "\0" x 256);
my $length = syscall(192, $link, $name, $value, 256);
printf "raw-lgetxattr=%s\n", $length >= 0 ? "ok" : $! + 0;`;

const SCRIPT = [
  'mkdir -p src && printf hello > src/a.txt && ln -s a.txt src/link',
  'ls -l src && echo ok-ls-l',
  'ls -l src/link && echo ok-ls-link',
  'ls src && echo ok-ls-dir',
  '[ "$(stat -c %s src/a.txt)" = 5 ] && echo ok-stat',
  '[ "$(find . -name a.txt -type f)" = ./src/a.txt ] && echo ok-find',
  "git init -q && git add -A && git status --short | grep -qx 'A  src/a.txt' && echo ok-git-status",
  `node -e 'process.exit(require("fs").statSync("src/a.txt").size === 5 ? 0 : 1)' && echo ok-node-stat`,
  `printf '{"scripts":{"test":"node -e 0"}}' > package.json && HOME=$(mktemp -d) npm test && echo ok-npm-test`,
  'grep -q /opt/agent-runner/statx-shim/libstatx-shim.so /proc/self/maps && echo ok-shim-loaded',
  `perl -e '${RAW_CALLS}'`,
].join('\n');

const TOOLS = [
  'ok-ls-l',
  'ok-ls-link',
  'ok-ls-dir',
  'ok-stat',
  'ok-find',
  'ok-git-status',
  'ok-node-stat',
  'ok-npm-test',
  'ok-shim-loaded',
];

async function runInSandbox(containerRuntime: ContainerRuntime): Promise<string> {
  const taskId = `test-statx-${randomUUID().slice(0, 8)}`;
  const workspace = await mkdtemp(path.join(scratch, 'workspace-'));
  await chown(workspace, UID, UID);
  const sandbox = await runtime.create({
    taskId,
    repoPath: workspace,
    image,
    user: { uid: UID, gid: UID },
    mounts: [{ hostPath: workspace, containerPath: '/workspace' }],
    workdir: '/workspace',
    env: {},
    limits: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 256 },
    network: { mode: 'none' },
    labels: { 'agent-runner.test': 'statx-shim' },
    runtime: containerRuntime,
  });
  onTestFinished(async () => {
    await runtime.remove(sandbox.id);
    expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
  });
  const result = await bashAsWorker(sandbox.id, SCRIPT, { runtime, timeoutMs: 120_000 });
  return result.output;
}

describe('the statx shim in the worker image', () => {
  it("under runsc: a link's label answers EBADF, and ls -l, stat, find, git, node and npm work anyway", async () => {
    const output = await runInSandbox('runsc');
    expect(output).toMatch(/^raw-lgetxattr=9$/m);
    expect(output).toContain('raw-statx-0=ok');
    for (const marker of TOOLS) expect(output, output).toContain(marker);
    expect(output).not.toContain('Invalid argument');
    expect(output).not.toContain('Bad file descriptor');
  }, 180_000);

  it("under runc: the kernel's own answers (the shim changes none), and the same tools work", async () => {
    const output = await runInSandbox('runc');
    expect(output).toContain('raw-statx-800=ok');
    expect(output).toContain('raw-statx-0=ok');
    expect(output).toMatch(/^raw-lgetxattr=(ok|61|95)$/m);
    for (const marker of TOOLS) expect(output, output).toContain(marker);
  }, 180_000);
});
