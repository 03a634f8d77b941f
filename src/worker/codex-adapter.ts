/**
 * The Codex CLI as a worker: one `codex exec --json` (or `codex exec resume`) per run, executed in the task's
 * sandbox through the SandboxRuntime port. The container is the sandbox, so codex's own sandbox is bypassed
 * (bwrap cannot create namespaces under Docker's default seccomp). Codex talks to the model through a custom
 * provider given with `-c`, whose key comes from an environment variable of the container: the caller decides
 * its value (the real key now, a per-task gateway token later).
 */
import { instructionsFilePath, withInstructionsFile } from './instructions-file.js';
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type {
  SandboxRuntime,
  WorkerAdapter,
  WorkerMode,
  WorkerRunRequest,
  WorkerRunResult,
} from '../core/ports.js';
import { InternalError, UserError } from '../errors.js';
import { endStrayProcesses } from '../sandbox/stray-processes.js';
import { takeWorkerFile } from '../sandbox/worker-files.js';
import { CodexEventParser, toWorkerRunResult } from './codex-events.js';

/** The provider id codex knows our endpoint by (`openai` is reserved by codex). */
export const CODEX_PROVIDER_ID = 'agentrunner';
export const CODEX_JSONL_FILE = 'codex.jsonl';
export const CODEX_STDERR_FILE = 'codex.stderr.log';

/** The model endpoint codex calls (OpenAI Responses API). */
export interface CodexProvider {
  /** Base URL including `/v1`; codex posts to `${baseUrl}/responses`. */
  baseUrl: string;
  /** Name of the container environment variable holding the bearer token. */
  envKey: string;
  /** Retries of a failed HTTP request (codex default 4). Low values make a broken endpoint fail fast. */
  requestMaxRetries?: number;
  /** Retries of a stream that broke or answered `response.failed` (codex default 5). */
  streamMaxRetries?: number;
  /** A stream silent for this long fails the turn. */
  streamIdleTimeoutMs?: number;
}

export interface CodexWorkerOptions {
  model: string;
  provider: CodexProvider;
  /** Where the workspace is mounted in the container. */
  workdir?: string;
  /** CODEX_HOME inside the container: per task, kept across runs (sessions live there, so resume works). */
  codexHome: string;
  /**
   * The same directory on the runner's side, when it is a bind mount. The last message file (`-o`) is read
   * from here; without it the final message is the last `agent_message` of the stream.
   */
  codexHomeHostPath?: string;
  /** Extra `-c key=value` overrides (values are TOML), appended after ours so they win. */
  configOverrides?: string[];
  /** Flags appended after agent-runner's own (`workers.codex.extraArgs`). */
  extraArgs?: readonly string[];
}

export interface CodexArgvInput {
  mode: WorkerMode;
  prompt: string;
  threadId?: string;
  model: string;
  provider: CodexProvider;
  workdir: string;
  /** Container path for `-o/--output-last-message`. */
  lastMessagePath?: string;
  configOverrides?: string[];
  extraArgs?: readonly string[];
}

const DEFAULT_RETRIES = 2;
const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 300_000;

/** A TOML basic string. JSON's escapes are a subset of TOML's, except that TOML wants no raw controls. */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

function nonNegativeInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) {
    throw new UserError('config_invalid', `${name} must be a non-negative integer, got ${value}.`);
  }
  return value;
}

/** The inline table that declares our provider, e.g. `{name="agentrunner",base_url="...",...}`. */
export function codexProviderToml(provider: CodexProvider): string {
  const fields = [
    `name=${tomlString(CODEX_PROVIDER_ID)}`,
    `base_url=${tomlString(provider.baseUrl)}`,
    `env_key=${tomlString(provider.envKey)}`,
    `wire_api="responses"`,
    `request_max_retries=${nonNegativeInt('requestMaxRetries', provider.requestMaxRetries ?? DEFAULT_RETRIES)}`,
    `stream_max_retries=${nonNegativeInt('streamMaxRetries', provider.streamMaxRetries ?? DEFAULT_RETRIES)}`,
    `stream_idle_timeout_ms=${nonNegativeInt(
      'streamIdleTimeoutMs',
      provider.streamIdleTimeoutMs ?? DEFAULT_STREAM_IDLE_TIMEOUT_MS,
    )}`,
  ];
  return `{${fields.join(',')}}`;
}

/**
 * The argv of one codex run. Pure, so every flag is unit-tested. The prompt is one argv element (never a
 * shell string); it comes after `--` so a prompt starting with `-` is not read as a flag.
 */
export function buildCodexArgv(input: CodexArgvInput): string[] {
  if (input.mode === 'resume' && !input.threadId) {
    throw new InternalError('codex resume needs the thread id of an earlier run.');
  }
  // codex reads the prompt from stdin when it is `-`, and stdin is closed: it would run with no prompt.
  if (input.prompt.trim() === '' || input.prompt.trim() === '-') {
    throw new InternalError(
      'The worker prompt is empty (or `-`); the Meta-agent must give codex something to do.',
    );
  }
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(input.provider.envKey)) {
    throw new UserError(
      'config_invalid',
      `worker.apiKeyEnv must be an environment variable name (letters, digits, _), got "${input.provider.envKey}".`,
    );
  }
  const argv = [
    'codex',
    'exec',
    '--json',
    '--dangerously-bypass-approvals-and-sandbox',
    '--skip-git-repo-check',
    '-C',
    input.workdir,
    '-m',
    input.model,
    '-c',
    `model_provider=${CODEX_PROVIDER_ID}`,
    '-c',
    `model_providers.${CODEX_PROVIDER_ID}=${codexProviderToml(input.provider)}`,
    // Codex sends analytics when it exits; with the sandbox cut off from the network (gateway-only) that
    // send waits about 5 s for nothing on every run. Measured: 6.5 s → 1.4 s for the demo's run.
    '-c',
    'analytics.enabled=false',
    // Codex's curated plugins sync (on by default) runs `git ls-remote https://github.com/openai/plugins.git`
    // at every start on a tokio runtime of its own, which also listens for SIGCHLD. Where pidfd_open is
    // missing (gVisor's runsc answers ENOSYS) child exits are learned from SIGCHLD alone, and that runtime
    // sometimes takes the signal's wake-up: codex's shell has exited but is never reaped, and the command
    // never completes (seen with runsc's strace: the shell a zombie until the run's timeout). The sandbox
    // cannot reach GitHub anyway.
    '-c',
    'features.plugins=false',
  ];
  for (const override of input.configOverrides ?? []) argv.push('-c', override);
  argv.push(...(input.extraArgs ?? []));
  if (input.lastMessagePath !== undefined) argv.push('-o', input.lastMessagePath);
  if (input.mode === 'resume') argv.push('resume', input.threadId as string);
  argv.push('--', input.prompt);
  return argv;
}

/** No byte of the project's own AGENTS.md files is read by codex (the instructions file holds the base's). */
export const PROJECT_DOC_OFF = 'project_doc_max_bytes=0';

/** Runs codex in a sandbox through the SandboxRuntime port. */
export class CodexWorkerAdapter implements WorkerAdapter {
  readonly type = 'codex';
  private readonly workdir: string;

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly options: CodexWorkerOptions,
  ) {
    this.workdir = options.workdir ?? '/workspace';
  }

  async run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    await mkdir(request.runDir, { recursive: true });
    const lastMessageName = `agent-runner-last-message-${randomUUID()}.txt`;
    const hostCodexHome = this.options.codexHomeHostPath;
    const argv = buildCodexArgv({
      mode: request.mode,
      prompt: request.prompt,
      threadId: request.threadId,
      model: this.options.model,
      provider: this.options.provider,
      workdir: this.workdir,
      lastMessagePath:
        hostCodexHome === undefined ? undefined : path.posix.join(this.options.codexHome, lastMessageName),
      configOverrides: [
        ...(this.options.configOverrides ?? []),
        // The project's AGENTS.md (as committed at the base) is in the instructions file, before the memory
        // bank: codex's own read of the workspace's copy is off, so the model gets it once and in that order.
        ...(request.instructions === undefined ? [] : [PROJECT_DOC_OFF]),
      ],
      extraArgs: this.options.extraArgs,
    });
    const parser = new CodexEventParser(request.onEvent);
    const command = withInstructionsFile(
      { argv, env: { CODEX_HOME: this.options.codexHome } },
      instructionsFilePath('codex', this.options.codexHome),
      request.instructions,
    );
    const exec = await this.runtime.exec(request.sandboxId, command.argv, {
      workdir: this.workdir,
      env: command.env,
      timeoutMs: request.timeoutMs,
      graceMs: request.graceMs,
      stdoutPath: path.join(request.runDir, CODEX_JSONL_FILE),
      stderrPath: path.join(request.runDir, CODEX_STDERR_FILE),
      onStdoutLine: (line) => parser.push(line),
      signal: request.signal,
    });
    // Before anything of the sandbox is looked at: nothing the run started (setsid, nohup daemons) may
    // still be running while the host reads its files, observes facts or runs the DoD.
    await endStrayProcesses(this.runtime, request.sandboxId, request.graceMs);
    // The worker can see this file's name (codex's argv is in /proc) and put a symlink or a FIFO there:
    // takeWorkerFile never follows one and reads only a regular file of bounded size.
    const lastMessage =
      hostCodexHome === undefined ? null : await takeWorkerFile(hostCodexHome, lastMessageName);
    return toWorkerRunResult(parser.summary(), exec, { timeoutMs: request.timeoutMs, lastMessage });
  }
}
