/**
 * Gemini CLI as a worker: one `gemini --prompt=... --output-format stream-json` per run in the task's sandbox.
 * Every approval is skipped (`--yolo`) and the workspace is trusted (`--skip-trust`): the container is the
 * sandbox. Gemini CLI talks to the model through the gateway: `GOOGLE_GEMINI_BASE_URL` is the relay's origin
 * plus gemini's prefix, its key the per-task gateway token. The model is always named (`--model`): without it
 * the CLI's "auto" mode adds a router call to another model, which the gateway's pin would refuse. Its
 * settings come from the image's read-only system settings file (API-key auth, no usage statistics, no
 * telemetry, no auto-update, three attempts per request), which wins over anything the worker writes into
 * its own; its state (sessions) lives in `GEMINI_CLI_HOME`, a directory of the task's worker home kept between
 * runs, so `--resume` finds the session chosen up front with `--session-id`.
 */
import { instructionsFilePath } from './instructions-file.js';
import type {
  SandboxRuntime,
  WorkerAdapter,
  WorkerMode,
  WorkerRunRequest,
  WorkerRunResult,
} from '../core/ports.js';
import { InternalError } from '../errors.js';
import { runSession, runStreamingCli, type CliWorkerOptions } from './cli-run.js';
import { GeminiEventParser } from './gemini-events.js';

/** Where the worker image keeps Gemini CLI's system settings (written at build time, root-owned). */
export const GEMINI_SYSTEM_SETTINGS = '/etc/agent-runner/gemini-settings.json';

/** GEMINI_CLI_HOME is its `home`; GOOGLE_GEMINI_BASE_URL its `baseUrl` (the origin, without `/v1beta`). */
export type GeminiWorkerOptions = CliWorkerOptions;

/** The argv of one gemini run; the prompt is one `--prompt=` element, so nothing in it is read as a flag. */
export function buildGeminiArgv(input: {
  mode: WorkerMode;
  prompt: string;
  sessionId: string;
  model: string;
  extraArgs?: readonly string[];
}): string[] {
  if (input.prompt.trim() === '') {
    throw new InternalError('The worker prompt is empty; the Meta-agent must give gemini something to do.');
  }
  return [
    'gemini',
    `--prompt=${input.prompt}`,
    '--model',
    input.model,
    '--output-format',
    'stream-json',
    '--yolo',
    '--skip-trust',
    input.mode === 'resume' ? '--resume' : '--session-id',
    input.sessionId,
    ...(input.extraArgs ?? []),
  ];
}

export function geminiEnv(options: GeminiWorkerOptions): Record<string, string> {
  return {
    GOOGLE_GEMINI_BASE_URL: options.baseUrl,
    GEMINI_API_KEY: options.apiKey,
    GEMINI_MODEL: options.model,
    GEMINI_CLI_HOME: options.home,
    GEMINI_CLI_SYSTEM_SETTINGS_PATH: GEMINI_SYSTEM_SETTINGS,
    // Without it the CLI starts a second Node process of itself (for a larger heap), which doubles its start:
    // the sandbox's memory limit, not the heap flag, is what bounds it here.
    GEMINI_CLI_NO_RELAUNCH: 'true',
  };
}

export class GeminiWorkerAdapter implements WorkerAdapter {
  readonly type = 'gemini';

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly options: GeminiWorkerOptions,
  ) {}

  run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    const sessionId = runSession('gemini', request);
    return runStreamingCli(this.runtime, request, {
      instructionsFile: instructionsFilePath('gemini', this.options.home),
      worker: 'gemini',
      argv: buildGeminiArgv({
        mode: request.mode,
        prompt: request.prompt,
        sessionId,
        model: this.options.model,
        extraArgs: this.options.extraArgs,
      }),
      env: geminiEnv(this.options),
      workdir: this.options.workdir ?? '/workspace',
      parser: new GeminiEventParser(request.onEvent),
      sessionId,
    });
  }
}
