/**
 * DockerSandboxRuntime against the real engine and the real base image: hardening seen from inside, limits
 * that hold, output that is complete on disk and bounded in memory, timeouts that leave nothing behind.
 */
import { randomUUID } from 'node:crypto';
import { chown, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { SandboxSpec } from '../../src/core/ports.js';
import { InternalError } from '../../src/errors.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { EXEC_MARKER_VARIABLE, killerArgv } from '../../src/sandbox/exec-killer.js';
import { endStrayProcesses } from '../../src/sandbox/stray-processes.js';

const IMAGE = process.env.AGENT_RUNNER_TEST_BASE_IMAGE ?? 'agent-runner-base:bookworm';
const UID = 10001;
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'agent-runner-sandbox-test-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A sandbox with its own task id, a /workspace owned by UID, removed and checked gone after the test. */
async function startSandbox(overrides: Partial<SandboxSpec> = {}) {
  const taskId = `test-sandbox-${randomUUID().slice(0, 8)}`;
  const workspace = await mkdtemp(path.join(scratch, 'workspace-'));
  await chown(workspace, UID, UID);
  const spec: SandboxSpec = {
    taskId,
    repoPath: workspace,
    image: IMAGE,
    user: { uid: UID, gid: UID },
    mounts: [{ hostPath: workspace, containerPath: '/workspace' }],
    workdir: '/workspace',
    env: {},
    limits: { cpus: 1, memoryBytes: 512 * 1024 * 1024, pids: 256 },
    network: { mode: 'none' },
    labels: { 'agent-runner.test': 'sandbox-docker-runtime' },
    ...overrides,
  };
  const sandbox = await runtime.create(spec).catch(async (error: unknown) => {
    expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
    throw error;
  });
  onTestFinished(async () => {
    try {
      await runtime.remove(sandbox.id);
      expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
    } finally {
      for (const leftover of await runtime.list({ 'agent-runner.task': taskId })) {
        await docker.getContainer(leftover.id).remove({ force: true });
      }
    }
  });
  return { sandbox, taskId, workspace };
}

describe('DockerSandboxRuntime', () => {
  it('answers ping with the engine version', async () => {
    expect((await runtime.ping()).version).toMatch(/^\d+\.\d+/);
  });

  it('runs as a non-root user with no capabilities, a read-only root and no Docker socket', async () => {
    const { sandbox, taskId } = await startSandbox();
    const [listed] = await runtime.list({ 'agent-runner.task': taskId });
    expect(listed?.name).toMatch(new RegExp(`^agent-runner-${taskId}-[0-9a-f]{6}$`));
    expect(listed?.labels).toMatchObject({
      'agent-runner.task': taskId,
      'agent-runner.version': '0.0.0-test',
      'agent-runner.pid': String(process.pid),
      'agent-runner.test': 'sandbox-docker-runtime',
    });

    const id = await runtime.exec(sandbox.id, ['id', '-u'], { timeoutMs: 30_000 });
    expect(id.exitCode).toBe(0);
    expect(id.stdoutTail.trim()).toBe(String(UID));

    const caps = await runtime.exec(sandbox.id, ['grep', '^CapEff:', '/proc/self/status'], {
      timeoutMs: 30_000,
    });
    expect(caps.stdoutTail).toMatch(/^CapEff:\s+0+$/m);

    const usr = await runtime.exec(sandbox.id, ['touch', '/usr/agent-runner-probe'], { timeoutMs: 30_000 });
    expect(usr.exitCode).not.toBe(0);
    expect(usr.stderrTail).toMatch(/Read-only file system|Permission denied/);

    const socket = await runtime.exec(sandbox.id, ['ls', '/var/run/docker.sock', '/run/docker.sock'], {
      timeoutMs: 30_000,
    });
    expect(socket.exitCode).not.toBe(0);
    expect(socket.stderrTail).toMatch(/No such file or directory/);

    const home = await runtime.exec(
      sandbox.id,
      ['bash', '-c', 'echo ok > "$HOME/probe" && echo ok > /tmp/probe && echo $HOME'],
      { timeoutMs: 30_000 },
    );
    expect(home).toMatchObject({ exitCode: 0, stdoutTail: '/home/agent\n' });

    // Toolchains execute what they build under the temp dir (go test's test binaries): /tmp is not noexec, and
    // it is bounded (half the container's memory).
    const tmpExec = await runtime.exec(
      sandbox.id,
      [
        'bash',
        '-c',
        'printf "#!/bin/sh\\necho ran\\n" > /tmp/tool && chmod +x /tmp/tool && /tmp/tool && grep " /tmp " /proc/mounts',
      ],
      { timeoutMs: 30_000 },
    );
    expect(tmpExec.exitCode, tmpExec.stderrTail).toBe(0);
    expect(tmpExec.stdoutTail).toMatch(/^ran\n/);
    expect(tmpExec.stdoutTail).not.toMatch(/noexec/);
    expect(tmpExec.stdoutTail).toMatch(/size=\d+k/);

    const init = await runtime.exec(sandbox.id, ['cat', '/proc/1/comm'], { timeoutMs: 30_000 });
    expect(init.stdoutTail.trim()).toMatch(/docker-init|tini/);

    const network = await runtime.exec(sandbox.id, ['cat', '/proc/net/dev'], { timeoutMs: 30_000 });
    expect(network.stdoutTail).not.toMatch(/eth0/);
  });

  it('refuses uid 0 and a mount that exposes the Docker socket', async () => {
    const base: SandboxSpec = {
      taskId: `test-refuse-${randomUUID().slice(0, 8)}`,
      repoPath: scratch,
      image: IMAGE,
      user: { uid: 0, gid: 0 },
      mounts: [],
      workdir: '/',
      env: {},
      limits: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 64 },
      network: { mode: 'none' },
    };
    await expect(runtime.create(base)).rejects.toBeInstanceOf(InternalError);
    const socketMount = {
      ...base,
      user: { uid: UID, gid: UID },
      mounts: [{ hostPath: '/var/run', containerPath: '/x' }],
    };
    await expect(runtime.create(socketMount)).rejects.toThrow(/Docker socket/);
    const hostNetwork = {
      ...base,
      user: { uid: UID, gid: UID },
      network: { mode: 'network' as const, name: 'host' },
    };
    await expect(runtime.create(hostNetwork)).rejects.toThrow(/Refusing network/);
    expect(await runtime.list({ 'agent-runner.task': base.taskId })).toEqual([]);
  });

  it('writes files in /workspace owned by the sandbox user on the host', async () => {
    const { sandbox, workspace } = await startSandbox();
    const result = await runtime.exec(sandbox.id, ['bash', '-c', 'echo hello > made-inside.txt'], {
      timeoutMs: 30_000,
    });
    expect(result.exitCode).toBe(0);
    const file = path.join(workspace, 'made-inside.txt');
    expect(await readFile(file, 'utf8')).toBe('hello\n');
    expect((await stat(file)).uid).toBe(UID);
  });

  it('passes argv without a shell, env and workdir, and streams lines to callbacks and files', async () => {
    const { sandbox } = await startSandbox();
    const stdoutPath = path.join(scratch, `run-${randomUUID()}`, 'nested', 'stdout.log');
    const stderrPath = path.join(path.dirname(stdoutPath), 'stderr.log');
    const outLines: string[] = [];
    const errLines: string[] = [];
    const result = await runtime.exec(
      sandbox.id,
      [
        'bash',
        '-c',
        'printf "a\\nb\\n"; echo "$1 $GREETING $PWD" >&2; read -t 1 line; echo "stdin:$?"',
        'argv0',
        '$(not run) ;',
      ],
      {
        timeoutMs: 30_000,
        env: { GREETING: 'hi there' },
        workdir: '/tmp',
        stdoutPath,
        stderrPath,
        onStdoutLine: (line) => outLines.push(line),
        onStderrLine: (line) => errLines.push(line),
      },
    );
    expect(result).toMatchObject({
      exitCode: 0,
      timedOut: false,
      interrupted: false,
      oomKilled: false,
      signal: null,
    });
    // stdin is not attached: `read` sees EOF at once (status 1) instead of waiting.
    expect(outLines).toEqual(['a', 'b', 'stdin:1']);
    expect(errLines).toEqual(['$(not run) ; hi there /tmp']);
    expect(await readFile(stdoutPath, 'utf8')).toBe('a\nb\nstdin:1\n');
    expect(await readFile(stderrPath, 'utf8')).toBe('$(not run) ; hi there /tmp\n');
    expect(result.durationMs).toBeGreaterThan(0);

    const failing = await runtime.exec(sandbox.id, ['bash', '-c', 'exit 7'], { timeoutMs: 30_000 });
    expect(failing).toMatchObject({ exitCode: 7, oomKilled: false });
  });

  it('keeps the whole of a large output on disk and only a bounded tail in memory', async () => {
    const { sandbox } = await startSandbox();
    const stdoutPath = path.join(scratch, `big-${randomUUID()}.log`);
    let lines = 0;
    // 500 000 lines of 100 bytes, then a last line without a newline: 50 MB.
    const result = await runtime.exec(
      sandbox.id,
      ['bash', '-c', 'yes "$(printf "%099d" 0)" | head -n 500000; printf END'],
      { timeoutMs: 30_000, stdoutPath, tailBytes: 4096, onStdoutLine: () => (lines += 1) },
    );
    expect(result.exitCode).toBe(0);
    expect((await stat(stdoutPath)).size).toBe(50_000_003);
    expect(result.stdoutTail.length).toBe(4096);
    expect(result.stdoutTail.endsWith('0000\nEND')).toBe(true);
    expect(lines).toBe(500_001);
  });

  it('times out a command whose child escaped into its own session and leaves no process behind', async () => {
    const { sandbox } = await startSandbox();
    const result = await runtime.exec(sandbox.id, ['bash', '-c', 'setsid sleep 300 & sleep 300'], {
      timeoutMs: 2000,
      graceMs: 2000,
    });
    expect(result).toMatchObject({ exitCode: 124, timedOut: true, interrupted: false });
    expect(result.durationMs).toBeGreaterThanOrEqual(2000);
    expect(result.durationMs).toBeLessThan(10_000);
    const ps = await runtime.exec(sandbox.id, ['ps', '-eo', 'pid,args'], { timeoutMs: 30_000 });
    expect(ps.exitCode).toBe(0);
    expect(ps.stdoutTail).not.toMatch(/sleep 300/);
    expect(ps.stdoutTail).toMatch(/sleep infinity/);
  });

  it('sends SIGKILL after the grace period to a process that ignores SIGTERM', async () => {
    const { sandbox } = await startSandbox();
    const result = await runtime.exec(
      sandbox.id,
      ['bash', '-c', 'trap "" TERM; setsid bash -c "trap \\"\\" TERM; sleep 301" & sleep 301'],
      {
        timeoutMs: 1000,
        graceMs: 1000,
      },
    );
    expect(result).toMatchObject({ exitCode: 124, timedOut: true });
    expect(result.durationMs).toBeGreaterThanOrEqual(2000);
    const ps = await runtime.exec(sandbox.id, ['ps', '-eo', 'pid,args'], { timeoutMs: 30_000 });
    expect(ps.stdoutTail).not.toMatch(/sleep 301/);
  });

  it('stops marked processes with the sh version of the killer too (images without bash)', async () => {
    const { sandbox } = await startSandbox();
    const marker = randomUUID();
    const started = await runtime.exec(
      sandbox.id,
      ['bash', '-c', `${EXEC_MARKER_VARIABLE}=${marker} setsid sleep 303 >/dev/null 2>&1 &`],
      { timeoutMs: 30_000 },
    );
    expect(started.exitCode).toBe(0);
    expect((await runtime.exec(sandbox.id, ['ps', '-eo', 'args'], { timeoutMs: 30_000 })).stdoutTail).toMatch(
      /sleep 303/,
    );
    const killer = await runtime.exec(sandbox.id, killerArgv('/bin/sh', marker, 1000), { timeoutMs: 30_000 });
    expect(killer.exitCode).toBe(0);
    expect(
      (await runtime.exec(sandbox.id, ['ps', '-eo', 'args'], { timeoutMs: 30_000 })).stdoutTail,
    ).not.toMatch(/sleep 303/);
  });

  it('stops a command on abort and reports it interrupted', async () => {
    const { sandbox } = await startSandbox();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 500);
    const result = await runtime.exec(sandbox.id, ['bash', '-c', 'setsid sleep 302 & sleep 302'], {
      timeoutMs: 30_000,
      signal: controller.signal,
    });
    expect(result).toMatchObject({ exitCode: 130, interrupted: true, timedOut: false });
    const ps = await runtime.exec(sandbox.id, ['ps', '-eo', 'pid,args'], { timeoutMs: 30_000 });
    expect(ps.stdoutTail).not.toMatch(/sleep 302/);
  });

  it('contains a fork bomb with the pids limit and still answers afterwards', async () => {
    const { sandbox } = await startSandbox({ limits: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 64 } });
    const bomb = await runtime.exec(
      sandbox.id,
      ['bash', '-c', 'for i in $(seq 1 2000); do sleep 30 & done; wait'],
      {
        timeoutMs: 3000,
        graceMs: 500,
      },
    );
    expect(bomb.timedOut).toBe(true);
    expect(bomb.stderrTail).toMatch(/fork: (retry: )?Resource temporarily unavailable/);
    const after = await runtime.exec(sandbox.id, ['bash', '-c', 'echo alive; ps -e --no-headers | wc -l'], {
      timeoutMs: 30_000,
    });
    expect(after.exitCode).toBe(0);
    expect(after.stdoutTail).toMatch(/^alive\n/);
    // The keeper, its init, ps, wc and bash: every sleep of the bomb is gone.
    expect(Number(after.stdoutTail.split('\n')[1])).toBeLessThan(10);
    // The limit raised for the killer while the bomb held every pid is set back.
    expect((await docker.getContainer(sandbox.id).inspect()).HostConfig.PidsLimit).toBe(64);
  });

  it('the reaper ends every process of the worker, a fork bomb without the exec marker included', async () => {
    const { sandbox } = await startSandbox({ limits: { cpus: 1, memoryBytes: 256 * 1024 * 1024, pids: 64 } });
    // Hidden ways to stay: a stopped process named like the keeper, a non-dumpable one (its /proc entry is
    // root's), and a fork bomb without the exec marker (env -i) that takes every pid of the limit.
    const planted = await runtime.exec(
      sandbox.id,
      [
        'bash',
        '-c',
        [
          `setsid bash -c 'exec -a "sleep infinity" sleep 401' >/dev/null 2>&1 &`,
          'stopped=$!; sleep 0.2; kill -STOP $stopped',
          `setsid python3 -c 'import ctypes,time; ctypes.CDLL(None).prctl(4,0,0,0,0); time.sleep(402)' >/dev/null 2>&1 &`,
          `env -i /usr/bin/setsid /bin/bash -c 'while :; do sleep 403 & done' >/dev/null 2>&1 &`,
          'sleep 2',
        ].join('\n'),
      ],
      { timeoutMs: 30_000 },
    );
    expect(planted.exitCode).toBe(0);
    // The attack ran: the bomb holds (nearly) every pid of the limit, as the engine counts them.
    const stats = (await docker.getContainer(sandbox.id).stats({ stream: false })) as {
      pids_stats?: { current?: number };
    };
    expect(stats.pids_stats?.current ?? 0).toBeGreaterThanOrEqual(60);
    expect(await endStrayProcesses(runtime, sandbox.id, 500)).toBe('clean');
    // Every pid is free again: the next exec starts, and only the init and the keeper are left.
    const after = await runtime.exec(sandbox.id, ['ps', '-eo', 'user:12,stat,args', '--no-headers'], {
      timeoutMs: 30_000,
    });
    expect(after.exitCode).toBe(0);
    const lines = after.stdoutTail.trim().split('\n');
    expect(after.stdoutTail).not.toMatch(/sleep 40[13]|python3/);
    expect(lines.filter((line) => !/\bps -eo/.test(line)).map((line) => line.split(/\s+/)[0])).toEqual([
      '10004',
      '10004',
    ]);
    expect(after.stdoutTail).toMatch(/sleep infinity/);
    expect((await docker.getContainer(sandbox.id).inspect()).HostConfig.PidsLimit).toBe(64);
  });

  it('reports a command killed for exceeding the memory limit as oomKilled', async () => {
    const { sandbox } = await startSandbox({ limits: { cpus: 1, memoryBytes: 64 * 1024 * 1024, pids: 64 } });
    const result = await runtime.exec(sandbox.id, ['bash', '-c', 'head -c 200m /dev/zero | tail'], {
      timeoutMs: 30_000,
    });
    expect(result).toMatchObject({ exitCode: 137, oomKilled: true, signal: 'SIGKILL' });
    // A SIGKILL that is not an OOM is not reported as one, even though the container has seen an OOM.
    const killed = await runtime.exec(sandbox.id, ['bash', '-c', 'kill -KILL $$'], { timeoutMs: 30_000 });
    expect(killed).toMatchObject({ exitCode: 137, oomKilled: false });
  });

  it('removes the sandbox, and removing it again is not an error', async () => {
    const { sandbox, taskId } = await startSandbox();
    await runtime.remove(sandbox.id);
    expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
    await runtime.remove(sandbox.id);
    await expect(runtime.exec(sandbox.id, ['true'], { timeoutMs: 30_000 })).rejects.toThrow(
      /gone or not running/,
    );
  });
});
