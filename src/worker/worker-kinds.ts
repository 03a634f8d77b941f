/**
 * The coding agents agent-runner can drive, and what each needs: its wire protocol, where the gateway
 * serves it in the sandbox, the exact requests it may make, how its key travels, the pinned CLI version and
 * its defaults. One table, read by the config schema, the gateway, the image build, the Meta-agent's prompt
 * and `doctor`, so adding a worker is one entry here plus its adapter.
 */

/** Every worker type, in the order docs/workers.md lists them. */
export const WORKER_TYPES = ['codex', 'claude', 'gemini', 'qwen', 'opencode'] as const;
export type WorkerType = (typeof WORKER_TYPES)[number];

/** The model API a worker speaks (what the gateway forwards and meters); `chat`: Chat Completions. */
export type WorkerProtocol = 'responses' | 'chat' | 'anthropic' | 'gemini';

/** The OpenAI-style APIs a `workers.<type>.api` may choose, for the workers that speak both. */
export const OPENAI_APIS = ['responses', 'chat'] as const;
export type OpenAiApi = (typeof OPENAI_APIS)[number];

/** The route of each OpenAI-style API below a worker's prefix. */
const OPENAI_ROUTES: Readonly<Record<OpenAiApi, string>> = {
  responses: '/responses',
  chat: '/chat/completions',
};
const openAiRoutes = (_models: readonly string[], protocol: WorkerProtocol) => [
  { method: 'POST', path: OPENAI_ROUTES[protocol === 'chat' ? 'chat' : 'responses'] },
];

/** How a request carries its key: the gateway takes the per-task token from there and puts the real key back. */
export type KeyHeader = 'authorization' | 'x-api-key' | 'x-goog-api-key';

export interface WorkerKind {
  type: WorkerType;
  /** The line the Meta-agent reads about this worker. */
  summary: string;
  /** The protocols it can speak, its default first (qwen and opencode: Responses or Chat Completions). */
  protocols: readonly [WorkerProtocol, ...WorkerProtocol[]];
  keyHeader: KeyHeader;
  /**
   * Where the gateway serves this worker inside the sandbox (under the relay's origin). The worker's base URL
   * is the relay origin plus this prefix; its routes are compared below it.
   */
  prefix: string;
  /**
   * Method and path (query string included, compared as sent) of every request the worker needs, for its
   * allowed models (Gemini names the model in the path: its route is the model pin) and the protocol it
   * speaks.
   */
  routes(models: readonly string[], protocol: WorkerProtocol): { method: string; path: string }[];
  /** The request body names the model (pinned by the gateway's body check); false: the route pins it. */
  modelInBody: boolean;
  /** The npm package and pinned version the worker image installs. */
  npmPackage: string;
  defaultVersion: string;
  /** Defaults of its `workers.<type>` block when the config leaves a field out (none: the Meta-agent's). */
  defaults: { baseUrl?: string; apiKeyEnv?: string; model?: string };
  /** The binary's name in the image. */
  binary: string;
  /**
   * The global instructions file the CLI reads on every run, relative to its state directory in the sandbox
   * (codex: CODEX_HOME; claude: CLAUDE_CONFIG_DIR; gemini: GEMINI_CLI_HOME; qwen, opencode: HOME): where the
   * memory bank reaches it.
   */
  instructionsFile: string;
  /**
   * The project's own instructions files the CLI reads natively at the workspace root, in its order (`first`:
   * only the first one present, `each`: every one present). agent-runner writes them as committed at the
   * task's base, then the memory bank, into the instructions file above, and turns the CLI's own read of the
   * workspace's copies off (each adapter its own way), so the model gets the project's text once and the
   * entries after it. `null`: the CLI cannot be kept from reading the project's file itself, nor be given
   * anything after it; the instructions file holds the entries alone (docs/memory.md).
   */
  projectFiles: { names: readonly string[]; read: 'first' | 'each' } | null;
}

export const WORKER_KINDS: Readonly<Record<WorkerType, WorkerKind>> = {
  codex: {
    type: 'codex',
    summary: 'OpenAI Codex CLI: strong at multi-file implementation and running the tests it writes',
    protocols: ['responses'],
    keyHeader: 'authorization',
    prefix: '/v1',
    routes: openAiRoutes,
    modelInBody: true,
    npmPackage: '@openai/codex',
    defaultVersion: '0.169.0',
    defaults: {},
    binary: 'codex',
    instructionsFile: 'AGENTS.md',
    projectFiles: { names: ['AGENTS.override.md', 'AGENTS.md'], read: 'first' },
  },
  claude: {
    type: 'claude',
    summary: "Anthropic's Claude Code: careful edits, reads the repository before it changes it",
    protocols: ['anthropic'],
    keyHeader: 'x-api-key',
    prefix: '/claude',
    routes: () => [{ method: 'POST', path: '/v1/messages?beta=true' }],
    modelInBody: true,
    npmPackage: '@anthropic-ai/claude-code-linux-x64',
    defaultVersion: '2.1.330',
    defaults: {
      baseUrl: 'https://api.anthropic.com',
      apiKeyEnv: 'ANTHROPIC_API_KEY',
      model: 'claude-sonnet-4-5',
    },
    binary: 'claude',
    instructionsFile: 'CLAUDE.md',
    projectFiles: { names: ['CLAUDE.md'], read: 'each' },
  },
  gemini: {
    type: 'gemini',
    summary: "Google's Gemini CLI: a large context window, quick reads of big codebases",
    protocols: ['gemini'],
    keyHeader: 'x-goog-api-key',
    prefix: '/gemini',
    routes: (models) =>
      models.map((model) => ({
        method: 'POST',
        path: `/v1beta/models/${model}:streamGenerateContent?alt=sse`,
      })),
    modelInBody: false,
    npmPackage: '@google/gemini-cli',
    defaultVersion: '0.61.0',
    defaults: {
      baseUrl: 'https://generativelanguage.googleapis.com',
      apiKeyEnv: 'GEMINI_API_KEY',
      model: 'gemini-2.5-pro',
    },
    binary: 'gemini',
    instructionsFile: '.gemini/GEMINI.md',
    // Its global file goes into the system instruction, the project's GEMINI.md into the first user message,
    // and `context.fileName` only adds names (0.61.0): the entries come before the project's file.
    projectFiles: null,
  },
  qwen: {
    type: 'qwen',
    summary: 'Qwen Code: an open-weights coding agent on any OpenAI-compatible endpoint',
    protocols: ['responses', 'chat'],
    keyHeader: 'authorization',
    prefix: '/qwen/v1',
    routes: openAiRoutes,
    modelInBody: true,
    npmPackage: '@qwen-code/qwen-code',
    defaultVersion: '0.24.4',
    // Like codex, an OpenAI-style API: the Meta-agent's endpoint, key and model unless configured.
    defaults: {},
    binary: 'qwen',
    // `context.fileName` is `.agent-runner/QWEN.md` (src/worker/qwen-adapter.ts): read in the global directory,
    // and in the workspace only inside agent-runner's own folder, never the project's QWEN.md or AGENTS.md.
    instructionsFile: '.qwen/.agent-runner/QWEN.md',
    projectFiles: { names: ['QWEN.md', 'AGENTS.md'], read: 'each' },
  },
  opencode: {
    type: 'opencode',
    summary: 'OpenCode: an open-source agent that plans in steps and reports exact exit codes',
    protocols: ['responses', 'chat'],
    keyHeader: 'authorization',
    prefix: '/opencode/v1',
    routes: openAiRoutes,
    modelInBody: true,
    // The native binary's platform package alone (the wrapper only copies it with an install script).
    npmPackage: 'opencode-linux-x64',
    defaultVersion: '1.18.33',
    defaults: {},
    binary: 'opencode',
    instructionsFile: '.config/opencode/AGENTS.md',
    projectFiles: { names: ['AGENTS.md', 'CLAUDE.md', 'CONTEXT.md'], read: 'first' },
  },
};

export function isWorkerType(value: string): value is WorkerType {
  return (WORKER_TYPES as readonly string[]).includes(value);
}
