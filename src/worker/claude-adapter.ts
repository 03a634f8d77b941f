/**
 * Claude Code as a worker: one `claude -p --output-format stream-json` per run in the task's sandbox, through
 * the SandboxRuntime port. The container is the sandbox, so every permission prompt is skipped
 * (`--dangerously-skip-permissions`, allowed for the worker's unprivileged uid). Claude Code talks to the
 * model through the gateway: `ANTHROPIC_BASE_URL` is the relay's origin plus claude's prefix, and its key is
 * the per-task gateway token (the gateway swaps it for the real key). Its state (sessions, settings) lives in
 * `CLAUDE_CONFIG_DIR`, a directory of the task's worker home that persists between runs, so `--resume` finds
 * the session; the run's session id is chosen up front (`--session-id`). Nonessential traffic (telemetry,
 * error reports, the auto-updater) is switched off, and its side-call model is pinned to the task's model.
 */
import path from 'node:path';
import { instructionsFilePath } from './instructions-file.js';
import { WORKER_KINDS } from './worker-kinds.js';
import type {
  SandboxRuntime,
  WorkerAdapter,
  WorkerMode,
  WorkerRunRequest,
  WorkerRunResult,
} from '../core/ports.js';
import { InternalError } from '../errors.js';
import { ClaudeEventParser } from './claude-events.js';
import { runSession, runStreamingCli, type CliWorkerOptions } from './cli-run.js';

/** CLAUDE_CONFIG_DIR is its `home`; ANTHROPIC_BASE_URL its `baseUrl` (the origin, without `/v1`). */
export type ClaudeWorkerOptions = CliWorkerOptions;

export interface ClaudeArgvInput {
  mode: WorkerMode;
  prompt: string;
  /** exec: the session id to create; resume: the session to continue. */
  sessionId: string;
  model: string;
  /**
   * The project's CLAUDE.md files in the workspace left unread (`claudeMdExcludes`, absolute paths): their text
   * as committed at the base is in the instructions file, before the memory bank.
   */
  excludeProjectFiles?: readonly string[];
  extraArgs?: readonly string[];
}

/** The argv of one claude run. Pure, so every flag is unit-tested; the prompt is one element after `--`. */
export function buildClaudeArgv(input: ClaudeArgvInput): string[] {
  if (input.prompt.trim() === '') {
    throw new InternalError('The worker prompt is empty; the Meta-agent must give claude something to do.');
  }
  return [
    'claude',
    '-p',
    '--output-format',
    'stream-json',
    '--verbose',
    '--dangerously-skip-permissions',
    '--model',
    input.model,
    input.mode === 'resume' ? '--resume' : '--session-id',
    input.sessionId,
    ...(input.excludeProjectFiles === undefined
      ? []
      : ['--settings', JSON.stringify({ claudeMdExcludes: input.excludeProjectFiles })]),
    ...(input.extraArgs ?? []),
    '--',
    input.prompt,
  ];
}

/** The environment of one claude run: the gateway, its state directory, no outside traffic, one model. */
export function claudeEnv(options: ClaudeWorkerOptions): Record<string, string> {
  return {
    ANTHROPIC_BASE_URL: options.baseUrl,
    ANTHROPIC_API_KEY: options.apiKey,
    ANTHROPIC_MODEL: options.model,
    // Side calls (titles, summaries) go to the "small fast" model: the same pinned model, or the gateway refuses.
    ANTHROPIC_SMALL_FAST_MODEL: options.model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: options.model,
    CLAUDE_CONFIG_DIR: options.home,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    // A refused key or a spent quota fails the run in seconds (its default, 10 retries with backoff, takes minutes).
    CLAUDE_CODE_MAX_RETRIES: '2',
  };
}

export class ClaudeWorkerAdapter implements WorkerAdapter {
  readonly type = 'claude';
  private readonly workdir: string;

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly options: ClaudeWorkerOptions,
  ) {
    this.workdir = options.workdir ?? '/workspace';
  }

  run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    const sessionId = runSession('claude', request);
    return runStreamingCli(this.runtime, request, {
      instructionsFile: instructionsFilePath('claude', this.options.home),
      worker: 'claude',
      argv: buildClaudeArgv({
        mode: request.mode,
        prompt: request.prompt,
        sessionId,
        model: this.options.model,
        ...(request.instructions === undefined
          ? {}
          : {
              excludeProjectFiles: (WORKER_KINDS.claude.projectFiles?.names ?? []).map((name) =>
                path.posix.join(this.workdir, name),
              ),
            }),
        extraArgs: this.options.extraArgs,
      }),
      env: claudeEnv(this.options),
      workdir: this.workdir,
      parser: new ClaudeEventParser(request.onEvent),
      sessionId,
    });
  }
}
