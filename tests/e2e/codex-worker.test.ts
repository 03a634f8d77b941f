/**
 * The real codex binary in the real worker image on a real Docker engine, talking to a scripted Responses
 * server on this machine. Each test gets its own sandbox (labelled with a unique task id), workspace (a git
 * repo owned by uid 10001) and CODEX_HOME, and checks afterwards that no container of that task is left.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { WorkerEvent, WorkerRunRequest } from '../../src/core/ports.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { VERSION } from '../../src/version.js';
import { CodexWorkerAdapter, type CodexProvider } from '../../src/worker/codex-adapter.js';
import {
  ScriptedResponsesServer,
  applyPatchCall,
  assistantMessage,
  commandCall,
} from '../support/scripted-responses-server.js';
import { builtWorkerImage } from '../support/worker-image.js';

const UID = 10001;
const KEY_VARIABLE = 'AGENT_RUNNER_WORKER_KEY';
const CODEX_HOME = '/codex-home';
// A name codex does not know: it warns ("Model metadata ... not found") and offers its fallback tool set,
// whose shell tool is `exec_command`, which is what the scripted server calls.
const MODEL = 'scripted-test-model';

const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: VERSION });
let image = '';
const servers: ScriptedResponsesServer[] = [];

beforeAll(async () => {
  await runtime.ping();
  image = await builtWorkerImage(docker);
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

async function startServer(): Promise<ScriptedResponsesServer> {
  const server = await new ScriptedResponsesServer().start();
  servers.push(server);
  return server;
}

function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' });
}

function chownTree(dir: string): void {
  execFileSync('chown', ['-R', `${UID}:${UID}`, dir]);
}

interface Sandbox {
  id: string;
  taskId: string;
  workspace: string;
  codexHome: string;
  runDir: string;
}

/** A workspace repo, a CODEX_HOME and a running sandbox; removed (and checked gone) when the test ends. */
async function startSandbox(): Promise<Sandbox> {
  const taskId = `codex-e2e-${randomUUID().slice(0, 8)}`;
  const workspace = tempDir('codex-ws-');
  git(workspace, 'init', '-q', '-b', 'main');
  git(
    workspace,
    '-c',
    'user.name=t',
    '-c',
    'user.email=t@example.com',
    'commit',
    '-q',
    '--allow-empty',
    '-m',
    'base',
  );
  chownTree(workspace);
  const codexHome = tempDir('codex-home-');
  chownTree(codexHome);
  const runDir = tempDir('codex-run-');

  const info = await runtime.create({
    taskId,
    repoPath: workspace,
    image,
    user: { uid: UID, gid: UID },
    mounts: [
      { hostPath: workspace, containerPath: '/workspace' },
      { hostPath: codexHome, containerPath: CODEX_HOME },
    ],
    workdir: '/workspace',
    env: { [KEY_VARIABLE]: `token-${taskId}` },
    limits: { cpus: 1, memoryBytes: 1024 ** 3, pids: 256 },
    network: { mode: 'bridge' },
    extraHosts: ['host.docker.internal:host-gateway'],
  });
  onTestFinished(async () => {
    await runtime.remove(info.id);
    expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
  });
  return { id: info.id, taskId, workspace, codexHome, runDir };
}

function adapter(
  sandbox: Sandbox,
  provider: Partial<CodexProvider> & { baseUrl: string },
  model = MODEL,
): CodexWorkerAdapter {
  return new CodexWorkerAdapter(runtime, {
    model,
    provider: {
      envKey: KEY_VARIABLE,
      requestMaxRetries: 0,
      streamMaxRetries: 0,
      streamIdleTimeoutMs: 30_000,
      ...provider,
    },
    codexHome: CODEX_HOME,
    codexHomeHostPath: sandbox.codexHome,
  });
}

function request(sandbox: Sandbox, overrides: Partial<WorkerRunRequest> = {}): WorkerRunRequest {
  return {
    sandboxId: sandbox.id,
    mode: 'exec',
    prompt: 'Create hello.txt containing hello.',
    runDir: sandbox.runDir,
    timeoutMs: 90_000,
    graceMs: 2_000,
    ...overrides,
  };
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Text of every `input` item of a recorded Responses request, for history assertions. */
function inputText(body: unknown): string {
  return JSON.stringify((body as { input?: unknown }).input ?? []);
}

describe('CodexWorkerAdapter with the real codex in Docker', () => {
  it('runs a scripted command that creates a file, and resumes the same thread with its history', async () => {
    const server = await startServer();
    const sandbox = await startSandbox();
    const worker = adapter(sandbox, { baseUrl: server.baseUrl('host.docker.internal') });
    server.enqueue(
      {
        kind: 'output',
        items: [commandCall('echo hello > hello.txt', 'call_1')],
        usage: { inputTokens: 100, outputTokens: 10 },
      },
      {
        kind: 'output',
        items: [assistantMessage('Done: created hello.txt')],
        usage: { inputTokens: 200, cachedTokens: 50, outputTokens: 20, reasoningTokens: 5 },
      },
    );
    const events: WorkerEvent[] = [];
    const result = await worker.run(request(sandbox, { onEvent: (event) => events.push(event) }));

    expect(result.errors).toEqual([]);
    expect(result.failed).toBe(false);
    expect(result.exitCode).toBe(0);
    const file = path.join(sandbox.workspace, 'hello.txt');
    expect(readFileSync(file, 'utf8')).toBe('hello\n');
    expect(statSync(file).uid).toBe(UID);
    expect(result.threadId).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.commands).toEqual([
      expect.objectContaining({ command: expect.stringContaining('echo hello > hello.txt'), exitCode: 0 }),
    ]);
    // Usage is summed over the requests of the turn.
    expect(result.usage).toEqual({
      inputTokens: 300,
      cachedInputTokens: 50,
      outputTokens: 30,
      reasoningTokens: 5,
    });
    expect(result.finalMessage?.trim()).toBe('Done: created hello.txt');
    expect(result.agentMessages).toEqual(['Done: created hello.txt']);
    expect(events).toContainEqual({ kind: 'thread_started', threadId: result.threadId });
    expect(events).toContainEqual(expect.objectContaining({ kind: 'command_finished', exitCode: 0 }));
    expect(events).toContainEqual({ kind: 'message', text: 'Done: created hello.txt' });
    // The key comes from the container variable named by env_key.
    const calls = server.responseRequests();
    expect(calls).toHaveLength(2);
    expect(calls[0]?.headers.authorization).toBe(`Bearer token-${sandbox.taskId}`);
    expect(inputText(calls[0]?.body)).toContain('Create hello.txt containing hello.');
    expect(inputText(calls[1]?.body)).toContain('function_call_output');
    // The raw stream and stderr are kept.
    const jsonl = readFileSync(path.join(sandbox.runDir, 'codex.jsonl'), 'utf8');
    expect(jsonl).toContain('"type":"thread.started"');
    expect(existsSync(path.join(sandbox.runDir, 'codex.stderr.log'))).toBe(true);
    // Sessions persist in the mounted CODEX_HOME, and the -o file was read and removed.
    expect(
      execFileSync('find', [sandbox.codexHome, '-name', 'rollout-*.jsonl'], { encoding: 'utf8' }),
    ).toContain(result.threadId ?? 'no thread');
    expect(execFileSync('ls', [sandbox.codexHome], { encoding: 'utf8' })).not.toContain('last-message');

    server.enqueue(
      { kind: 'output', items: [commandCall('echo again >> hello.txt', 'call_2')] },
      { kind: 'output', items: [assistantMessage('Appended')] },
    );
    const resumed = await worker.run(
      request(sandbox, { mode: 'resume', threadId: result.threadId ?? '', prompt: 'Now append again.' }),
    );
    expect(resumed.errors).toEqual([]);
    expect(resumed.threadId).toBe(result.threadId);
    expect(readFileSync(file, 'utf8')).toBe('hello\nagain\n');
    expect(resumed.finalMessage?.trim()).toBe('Appended');
    const resumeCall = server.responseRequests()[2];
    const history = inputText(resumeCall?.body);
    expect(history).toContain('Create hello.txt containing hello.');
    expect(history).toContain('Done: created hello.txt');
    expect(history).toContain('Now append again.');
    server.assertComplete();
  });

  it('reports the file changes of an apply_patch call (a model codex knows)', async () => {
    const server = await startServer();
    const sandbox = await startSandbox();
    // gpt-5.5 is a model codex knows: it offers the freeform apply_patch tool.
    const worker = adapter(sandbox, { baseUrl: server.baseUrl('host.docker.internal') }, 'gpt-5.5');
    server.enqueue(
      {
        kind: 'output',
        items: [
          applyPatchCall('*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch', 'patch_1'),
        ],
      },
      { kind: 'output', items: [assistantMessage('Patched')] },
    );
    const events: WorkerEvent[] = [];
    const result = await worker.run(request(sandbox, { onEvent: (event) => events.push(event) }));

    expect(result.errors).toEqual([]);
    expect(readFileSync(path.join(sandbox.workspace, 'notes.txt'), 'utf8')).toBe('first line\n');
    expect(result.fileChanges).toEqual([{ path: expect.stringMatching(/notes\.txt$/), kind: 'add' }]);
    expect(events).toContainEqual({
      kind: 'file_changed',
      path: expect.stringMatching(/notes\.txt$/),
      change: 'add',
    });
    expect(inputText(server.responseRequests()[1]?.body)).toContain('custom_tool_call_output');
    expect(result.finalMessage?.trim()).toBe('Patched');
  });

  it('stops a command that hangs at the timeout, with exit 124 and no process left', async () => {
    const server = await startServer();
    const sandbox = await startSandbox();
    // If codex comes back to the model while the command runs, the model hangs too.
    server.enqueue({ kind: 'output', items: [commandCall('sleep 600', 'call_sleep')] }, { kind: 'hang' });
    const worker = adapter(sandbox, { baseUrl: server.baseUrl('host.docker.internal') });
    const started = Date.now();
    const events: WorkerEvent[] = [];
    // Mid-run, the command is really running (so the check after the run can fail).
    const duringRun = delay(3_500)
      .then(() => runtime.exec(sandbox.id, ['ps', '-eo', 'pid,args'], { timeoutMs: 10_000 }))
      .catch((error: unknown) => ({ stdoutTail: `ps failed: ${String(error)}` }));
    const result = await worker.run(
      request(sandbox, { timeoutMs: 6_000, graceMs: 1_000, onEvent: (event) => events.push(event) }),
    );
    const elapsed = Date.now() - started;

    expect(result.exitCode).toBe(124);
    expect(result.timedOut).toBe(true);
    expect(result.failed).toBe(true);
    expect(result.errors.join('\n')).toContain('did not finish within 6s');
    expect(elapsed).toBeLessThan(20_000);
    // The command did start (so the timeout really cut a running command) and never finished.
    expect(events).toContainEqual({ kind: 'command_started', command: expect.stringContaining('sleep 600') });
    expect(result.commands).toEqual([
      expect.objectContaining({
        command: expect.stringContaining('sleep 600'),
        exitCode: null,
        status: 'in_progress',
      }),
    ]);
    expect((await duringRun).stdoutTail).toMatch(/sleep 600/);
    const ps = await runtime.exec(sandbox.id, ['ps', '-eo', 'pid,args'], { timeoutMs: 10_000 });
    expect(ps.exitCode).toBe(0);
    expect(ps.stdoutTail).not.toMatch(/sleep 600|codex/);
  });

  it('fails fast, not a hang, when the model answers 500', async () => {
    const server = await startServer();
    const sandbox = await startSandbox();
    server.enqueue({ kind: 'http_error', status: 500, message: 'scripted overload: try again later' });
    const worker = adapter(sandbox, { baseUrl: server.baseUrl('host.docker.internal') });
    const result = await worker.run(request(sandbox, { timeoutMs: 60_000 }));

    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBe(1);
    expect(result.failed).toBe(true);
    // codex 0.169.0 replaces the body of a 5xx with its own text (seen: the server's message is nowhere in its
    // output, logs or CODEX_HOME), so the failure carries codex's message, from turn.failed.
    expect(result.errors).toEqual([
      'We’re currently experiencing high demand, which may cause temporary errors.',
    ]);
    expect(result.durationMs).toBeLessThan(15_000);
    // Retries at 0: one request.
    expect(server.responseRequests()).toHaveLength(1);
  });

  it('fails with the server message when the model answers 400', async () => {
    const server = await startServer();
    const sandbox = await startSandbox();
    server.enqueue({ kind: 'http_error', status: 400, message: 'scripted bad request: unknown parameter' });
    const worker = adapter(sandbox, { baseUrl: server.baseUrl('host.docker.internal') });
    const result = await worker.run(request(sandbox, { timeoutMs: 60_000 }));

    expect(result.exitCode).toBe(1);
    expect(result.failed).toBe(true);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toContain('scripted bad request: unknown parameter');
    expect(result.durationMs).toBeLessThan(15_000);
  });

  it('ends a run whose endpoint is unreachable at the runner timeout, with a clear error', async () => {
    const sandbox = await startSandbox();
    const port = await closedPort();
    const worker = adapter(sandbox, { baseUrl: `http://host.docker.internal:${port}/v1` });
    const result = await worker.run(request(sandbox, { timeoutMs: 8_000, graceMs: 1_000 }));

    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBe(124);
    expect(result.failed).toBe(true);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toContain('codex did not finish within 8s');
    // codex's own retry notice says why.
    expect(result.errors[0]).toContain('Reconnecting... waiting for network');
    expect(result.durationMs).toBeLessThan(20_000);
  });
});
