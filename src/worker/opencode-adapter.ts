/**
 * OpenCode as a worker: one `opencode run --format json --auto --pure` per run in the task's sandbox, every
 * permission auto-approved (the container is the sandbox) and no external plugin. Its configuration is given
 * whole in `OPENCODE_CONFIG_CONTENT`: one provider (`openai`, so the Responses API; with `api: chat` its
 * bundled OpenAI-compatible provider, so Chat Completions, usage asked for) whose base URL is the
 * relay's origin plus opencode's prefix and whose key is the per-task gateway token, the pinned model as both
 * `model` and `small_model` (its side calls would otherwise ask another model, which the gateway refuses), no
 * auto-update, no sharing. `--title` is given so no title call is made. The model catalogue, default plugins,
 * auto-update and LSP downloads are switched off by their variables, and the plugin package it would install
 * from the npm registry on every start comes pre-installed from the image. Its state (sessions) lives under `HOME`, a
 * directory of the task's worker home kept between runs; a session's id cannot be chosen up front, so it is
 * read from the stream and `resume` passes it to `--session`.
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
import { runStreamingCli, type CliWorkerOptions } from './cli-run.js';
import { OpenCodeEventParser } from './opencode-events.js';

/** Where the image keeps OpenCode's config directory with its plugin package pre-installed. */
export const OPENCODE_IMAGE_CONFIG = '/opt/agent-runner/opencode-config';

// The plugin package's files stay in the image: the worker's config directory gets its manifests and a link to
// the image's node_modules (read-only, root's). A copy cost about 3 s of CPU per task (64 MB, 4,000 files) and
// as much disk under the worker home's cap.
const OPENCODE_PREPARE = [
  'mkdir -p "$HOME/.config"',
  [
    '{ [ -e "$HOME/.config/opencode" ] || {',
    'mkdir "$HOME/.config/opencode" &&',
    `cp ${OPENCODE_IMAGE_CONFIG}/package.json ${OPENCODE_IMAGE_CONFIG}/package-lock.json "$HOME/.config/opencode/" &&`,
    `ln -s ${OPENCODE_IMAGE_CONFIG}/node_modules "$HOME/.config/opencode/node_modules"; }; }`,
  ].join(' '),
  'exec "$@"',
].join(' && ');

/** HOME is its `home`; its provider's base URL its `baseUrl` (with `/v1`). */
export type OpenCodeWorkerOptions = CliWorkerOptions;

export function buildOpenCodeArgv(input: {
  mode: WorkerMode;
  prompt: string;
  sessionId?: string;
  extraArgs?: readonly string[];
}): string[] {
  if (input.prompt.trim() === '') {
    throw new InternalError('The worker prompt is empty; the Meta-agent must give opencode something to do.');
  }
  if (input.mode === 'resume' && !input.sessionId)
    throw new InternalError('opencode resume needs a session id.');
  return [
    'opencode',
    'run',
    '--title',
    'agent-runner',
    '--format',
    'json',
    '--auto',
    '--pure',
    ...(input.mode === 'resume' ? ['--session', input.sessionId as string] : []),
    ...(input.extraArgs ?? []),
    '--',
    input.prompt,
  ];
}

/** The one provider opencode is given: its id and its entry in the config's `provider` map. */
function openCodeProvider(options: OpenCodeWorkerOptions): [string, Record<string, unknown>] {
  const models = { [options.model]: {} };
  if (options.api !== 'chat')
    return ['openai', { options: { baseURL: options.baseUrl, apiKey: options.apiKey }, models }];
  return [
    'agent-runner',
    {
      npm: '@ai-sdk/openai-compatible',
      name: 'agent-runner gateway',
      options: { baseURL: options.baseUrl, apiKey: options.apiKey, includeUsage: true },
      models,
    },
  ];
}

export function openCodeEnv(options: OpenCodeWorkerOptions): Record<string, string> {
  const [providerId, provider] = openCodeProvider(options);
  const model = `${providerId}/${options.model}`;
  return {
    HOME: options.home,
    OPENCODE_CONFIG_CONTENT: JSON.stringify({
      provider: { [providerId]: provider },
      model,
      small_model: model,
      autoupdate: false,
      share: 'disabled',
      // Its own git snapshots of the worktree before and after each step: agent-runner takes the facts from
      // git itself, and the snapshots cost several seconds of CPU per run.
      snapshot: false,
    }),
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  };
}

export class OpenCodeWorkerAdapter implements WorkerAdapter {
  readonly type = 'opencode';

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly options: OpenCodeWorkerOptions,
  ) {}

  run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    const argv = buildOpenCodeArgv({
      mode: request.mode,
      prompt: request.prompt,
      ...(request.threadId ? { sessionId: request.threadId } : {}),
      extraArgs: this.options.extraArgs,
    });
    const parser = new OpenCodeEventParser(request.onEvent);
    return runStreamingCli(this.runtime, request, {
      instructionsFile: instructionsFilePath('opencode', this.options.home),
      worker: 'opencode',
      // Its HOME (a directory of the worker home) must exist before it starts, with the image's pre-installed
      // plugin package in its config directory (else it installs it from the npm registry); the argv stays argv.
      argv: ['sh', '-c', OPENCODE_PREPARE, 'opencode', ...argv],
      env: {
        ...openCodeEnv(this.options),
        // The project's AGENTS.md (as committed at the base) is in the instructions file, before the memory
        // bank: no project file or project config of the workspace is read.
        ...(request.instructions === undefined ? {} : { OPENCODE_DISABLE_PROJECT_CONFIG: '1' }),
      },
      workdir: this.options.workdir ?? '/workspace',
      parser,
      sessionId: request.threadId ?? '',
    });
  }
}
