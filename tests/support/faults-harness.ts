/**
 * Driving the real CLI as a child process for the fault tests (tests/faults): start `agent-runner run` with
 * scripted models, wait for a journal event, then do the fault for real (signals, docker kill, a vanishing
 * engine socket, a full disk) and inspect what is left: exit code, note, refs, containers.
 */
import { UNDER_RUNSC } from './test-runtime.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { taskContainers } from './task-containers.js';
import { startScriptedChatServer, type ScriptedChatServer } from './scripted-chat-server.js';
import { ScriptedResponsesServer, commandCall, type ScriptedReply } from './scripted-responses-server.js';
import { SLUG_JS, SLUG_TEST_JS, createNodeRepo, git, writeFileCommand } from './task-repo.js';
import { cliArgs } from './cli-bundle.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface RunnerProcess {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (signals as 128 + n) once the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts the CLI (tests/support/cli-bundle.ts) with `args` in `cwd`. */
export function startRunner(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): RunnerProcess {
  const child = spawn(process.execPath, cliArgs(args), {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  if (child.pid === undefined) throw new Error('the runner did not start');
  return { child, pid: child.pid, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Runs the CLI to its end. */
export async function runToEnd(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const runner = startRunner(args, options);
  const { code } = await runner.exited;
  return { code, stdout: runner.stdout(), stderr: runner.stderr() };
}

export type JournalEvent = { type: string; [key: string]: unknown };

/** The events of a task's journal so far (a torn last line is skipped). */
export function journalEvents(repoRoot: string, taskId: string): JournalEvent[] {
  const file = path.join(repoRoot, '.agent-runner', 'runs', taskId, 'events.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as JournalEvent];
      } catch {
        return [];
      }
    });
}

/** Waits until `predicate` holds for an event of the journal; fails after `timeoutMs` or when the runner exits. */
export async function waitForJournalEvent(
  repoRoot: string,
  taskId: string,
  predicate: (event: JournalEvent) => boolean,
  runner?: RunnerProcess,
  timeoutMs = 60_000,
): Promise<JournalEvent> {
  let gone = false;
  void runner?.exited.then(() => (gone = true));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = journalEvents(repoRoot, taskId).find(predicate);
    if (found) return found;
    if (gone) throw new Error(`the runner exited before the awaited event: ${runner?.stderr().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for a journal event of ${taskId}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A worker command started whose text includes `fragment`. */
export const commandStarted =
  (fragment: string) =>
  (event: JournalEvent): boolean =>
    event.type === 'worker_event' &&
    (event.event as { kind: string; command?: string }).kind === 'command_started' &&
    String((event.event as { command?: string }).command).includes(fragment);

const docker = createDockerClient();

/** This test's containers labelled with this task id, running or not (see task-containers.ts). */
export const labelledContainers = (taskId: string, repoRoot: string) => taskContainers(taskId, repoRoot);

/** Removes what a failed test may have left (never called on the path a test asserts). */
export async function forceRemoveContainers(taskId: string, repoRoot: string): Promise<void> {
  for (const container of await labelledContainers(taskId, repoRoot))
    await docker
      .getContainer(container.Id)
      .remove({ force: true })
      .catch(() => undefined);
}

/** Writes agent-runner.yaml with short timeouts (and commits it so the user's tree stays clean). */
export function writeFaultConfig(repoRoot: string, yaml: string): void {
  writeFileSync(path.join(repoRoot, 'agent-runner.yaml'), yaml);
}

/** The task note, or '' when none was written. */
export function readNote(repoRoot: string, taskId: string): string {
  const file = path.join(repoRoot, '.agent-runner', `task-${taskId}.md`);
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

export const SHORT_TIMEOUTS_YAML = [
  'meta:',
  '  requestTimeout: 5s',
  '  maxRetries: 1',
  'worker:',
  '  timeout: 60s',
  '  grace: 2s',
  'sandbox:',
  '  network: open',
  '',
].join('\n');

/** A codex turn that runs one shell command. */
export const command = (cmd: string): ScriptedReply => ({ kind: 'output', items: [commandCall(cmd)] });

/** Writes slug.js and its test, then commits them. */
export const COMMIT_SLUG = `${writeFileCommand('slug.js', SLUG_JS)}\n${writeFileCommand('slug.test.js', SLUG_TEST_JS)}\ngit add -A && git commit -q -m 'Add slugify'`;

export interface FaultTask {
  root: string;
  env: NodeJS.ProcessEnv;
  chat: ScriptedChatServer;
  responses: ScriptedResponsesServer;
}

/**
 * A repository with `yaml` committed as agent-runner.yaml, fresh scripted servers (so a failed test cannot
 * leave script steps to the next one) and the runner's environment; everything is removed when the test ends.
 * A concurrent test passes its own context's `onTestFinished`: the global one would clean up whichever test
 * vitest thinks is current.
 */
export async function setupFaultTask(
  taskId: string,
  yaml = SHORT_TIMEOUTS_YAML,
  onFinished: (cleanup: () => void | Promise<void>) => void = onTestFinished,
): Promise<FaultTask> {
  const chat = await startScriptedChatServer();
  const responses = await new ScriptedResponsesServer().start();
  onFinished(() => chat.close());
  onFinished(() => responses.close());
  const repo = createNodeRepo();
  writeFaultConfig(repo.root, yaml);
  git(repo.root, 'add', 'agent-runner.yaml');
  git(repo.root, 'commit', '-q', '-m', 'config');
  onFinished(repo.remove);
  onFinished(() => forceRemoveContainers(taskId, repo.root));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    OPENAI_BASE_URL: chat.url,
    OPENAI_API_KEY: 'sk-test-faults-key-000000000000',
    AGENT_RUNNER_WORKER_BASE_URL: responses.baseUrl('127.0.0.1'),
    AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
    // A runsc sandbox has loopback only: there the default policy (the open one is refused under runsc).
    ...(UNDER_RUNSC ? {} : { AGENT_RUNNER_NETWORK: 'open' }),
    CI: 'true',
  };
  return { root: repo.root, env, chat, responses };
}
