/**
 * The workers a task may use, resolved from the config: `worker.*` describes the default worker
 * (`worker.type`), each `workers.<type>` block adds one the Meta-agent may choose (or refines the default).
 * An unset field falls back to the worker's own default (codex: the Meta-agent's endpoint, key and model).
 */
import {
  WORKER_KINDS,
  type WorkerKind,
  type WorkerProtocol,
  type WorkerType,
} from '../worker/worker-kinds.js';
import type { Config } from './schema.js';

/** One configured worker, every field resolved. */
export interface WorkerProfile {
  type: WorkerType;
  kind: WorkerKind;
  /** The protocol it speaks (its kind's default, or `workers.<type>.api`). */
  protocol: WorkerProtocol;
  model: string;
  /** The provider's base URL as the CLI would use it (codex: with `/v1`; claude: the origin). */
  baseUrl: string;
  apiKeyEnv: string;
  version: string;
  timeoutMs: number;
  extraArgs: string[];
  /** Models the gateway lets this worker ask for. */
  allowedModels: string[];
}

type WorkersConfig = Pick<Config, 'meta' | 'worker' | 'workers'>;

/** The default worker first, then every other configured one, each once. */
export function configuredWorkers(config: WorkersConfig): WorkerProfile[] {
  const types = new Set<WorkerType>([config.worker.type]);
  for (const [type, block] of Object.entries(config.workers) as [WorkerType, unknown][])
    if (block !== undefined) types.add(type);
  return [...types].map((type) => workerProfile(config, type));
}

/** The names of the configured workers, default first. */
export function configuredWorkerTypes(config: WorkersConfig): WorkerType[] {
  return configuredWorkers(config).map((profile) => profile.type);
}

/** One worker's profile (configured or not: `doctor` and `image build --worker` ask for any). */
export function workerProfile(config: WorkersConfig, type: WorkerType): WorkerProfile {
  const kind = WORKER_KINDS[type];
  const block = config.workers[type];
  const isDefault = config.worker.type === type;
  const fromWorker = isDefault ? config.worker : undefined;
  // A worker with no provider of its own (codex, qwen, opencode: an OpenAI-style API) uses the Meta-agent's.
  const metaFallback = kind.defaults.baseUrl === undefined;
  const model =
    block?.model ?? fromWorker?.model ?? kind.defaults.model ?? (metaFallback ? config.meta.model : '');
  const baseUrl =
    block?.baseUrl ??
    fromWorker?.baseUrl ??
    kind.defaults.baseUrl ??
    (metaFallback ? config.meta.baseUrl : '');
  const apiKeyEnv =
    block?.apiKeyEnv ??
    fromWorker?.apiKeyEnv ??
    kind.defaults.apiKeyEnv ??
    (metaFallback ? config.meta.apiKeyEnv : '');
  return {
    type,
    kind,
    protocol: block?.api ?? kind.protocols[0],
    model,
    baseUrl,
    apiKeyEnv,
    version: block?.version ?? (type === 'codex' ? config.worker.codexVersion : kind.defaultVersion),
    timeoutMs: block?.timeout ?? config.worker.timeout,
    extraArgs: block?.extraArgs ?? [],
    allowedModels: (isDefault ? config.worker.allowedModels : undefined) ?? [model],
  };
}

/**
 * What the worker image holds: codex (always: the image's first worker) at its version, and every other
 * configured worker as `type@version`. Spread into an image build's or tag's inputs.
 */
export function imageWorkers(config: WorkersConfig): { codexVersion: string; extraWorkers: string[] } {
  return {
    codexVersion: workerProfile(config, 'codex').version,
    extraWorkers: configuredWorkers(config)
      .filter((profile) => profile.type !== 'codex')
      .map((profile) => `${profile.type}@${profile.version}`)
      .sort(),
  };
}
