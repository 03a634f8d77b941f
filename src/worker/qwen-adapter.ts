/**
 * Qwen Code as a worker: one `qwen --prompt=... --output-format stream-json` per run in the task's sandbox,
 * every approval skipped (`--yolo`: the container is the sandbox). It speaks the Responses API
 * (`--auth-type openai-responses`) or Chat Completions (`api: chat`: `--auth-type openai`) to the gateway:
 * `OPENAI_BASE_URL` is the relay's origin plus qwen's
 * prefix, its key the per-task gateway token. Its stream has Claude Code's shape (init, assistant tool uses,
 * user tool results with "Exit Code: N", result), read by the same parser. Its state lives under `HOME`, set
 * to a directory of the task's worker home kept between runs, so `--resume` finds the session chosen up front
 * with `--session-id`. Usage statistics are off (the variable and the image's read-only system settings, which
 * also switch off auto-update).
 */
import path from 'node:path';
import { instructionsFilePath, type InstructionsSettings } from './instructions-file.js';
import { WORKER_KINDS } from './worker-kinds.js';
import type {
  SandboxRuntime,
  WorkerAdapter,
  WorkerMode,
  WorkerRunRequest,
  WorkerRunResult,
} from '../core/ports.js';
import { InternalError } from '../errors.js';
import { ClaudeEventParser, QWEN_STREAM } from './claude-events.js';
import type { OpenAiApi } from './worker-kinds.js';
import { runSession, runStreamingCli, type CliWorkerOptions } from './cli-run.js';

/** Where the worker image keeps Qwen Code's system settings (written at build time, root-owned). */
export const QWEN_SYSTEM_SETTINGS = '/etc/agent-runner/qwen-settings.json';

/** HOME is its `home`; OPENAI_BASE_URL its `baseUrl` (with `/v1`: qwen posts to `<it>/responses`). */
export type QwenWorkerOptions = CliWorkerOptions;

export function buildQwenArgv(input: {
  mode: WorkerMode;
  prompt: string;
  sessionId: string;
  model: string;
  api?: OpenAiApi;
  extraArgs?: readonly string[];
}): string[] {
  if (input.prompt.trim() === '') {
    throw new InternalError('The worker prompt is empty; the Meta-agent must give qwen something to do.');
  }
  return [
    'qwen',
    `--prompt=${input.prompt}`,
    '--auth-type',
    input.api === 'chat' ? 'openai' : 'openai-responses',
    '--model',
    input.model,
    '--output-format',
    'stream-json',
    '--yolo',
    input.mode === 'resume' ? '--resume' : '--session-id',
    input.sessionId,
    ...(input.extraArgs ?? []),
  ];
}

export function qwenEnv(options: QwenWorkerOptions): Record<string, string> {
  return {
    OPENAI_BASE_URL: options.baseUrl,
    OPENAI_API_KEY: options.apiKey,
    OPENAI_MODEL: options.model,
    HOME: options.home,
    QWEN_CODE_SYSTEM_SETTINGS_PATH: QWEN_SYSTEM_SETTINGS,
    QWEN_USAGE_STATISTICS_ENABLED: 'false',
    QWEN_CODE_SUPPRESS_YOLO_WARNING: '1',
  };
}

/**
 * The user settings that point Qwen Code's context file name at the instructions file (as for Gemini CLI:
 * `<HOME>/.qwen/<name>`, and in the workspace only inside agent-runner's own folder, never the project's QWEN.md).
 */
export function qwenContextSettings(home: string): InstructionsSettings {
  return {
    file: path.posix.join(home, '.qwen', 'settings.json'),
    text: JSON.stringify({
      context: { fileName: path.posix.relative('.qwen', WORKER_KINDS.qwen.instructionsFile) },
    }),
  };
}

export class QwenWorkerAdapter implements WorkerAdapter {
  readonly type = 'qwen';

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly options: QwenWorkerOptions,
  ) {}

  run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    const sessionId = runSession('qwen', request);
    return runStreamingCli(this.runtime, request, {
      instructionsFile: instructionsFilePath('qwen', this.options.home),
      instructionsSettings: qwenContextSettings(this.options.home),
      worker: 'qwen',
      // Its HOME (a directory of the worker home) must exist before it starts; the argv stays argv.
      argv: [
        'sh',
        '-c',
        'mkdir -p "$HOME" && exec "$@"',
        'qwen',
        ...buildQwenArgv({
          mode: request.mode,
          prompt: request.prompt,
          sessionId,
          model: this.options.model,
          ...(this.options.api ? { api: this.options.api } : {}),
          extraArgs: this.options.extraArgs,
        }),
      ],
      env: qwenEnv(this.options),
      workdir: this.options.workdir ?? '/workspace',
      parser: new ClaudeEventParser(request.onEvent, QWEN_STREAM),
      sessionId,
    });
  }
}
