/**
 * What the model gateway is started with: the upstreams, the record/replay mode, the caps and the hooks
 * it reports to. ModelGateway (model-gateway.ts) re-exports them.
 */
import type { GatewayRefusal } from '../core/events.js';
import type { Redaction } from '../notes/redact.js';
import type { ExchangeKind, ReplayDivergenceError } from './cassette.js';
import type { GatewayBudget } from './gateway-budget.js';
import type { GatewayRoute } from './request-policy.js';
import type { KeyHeader, WorkerProtocol } from '../worker/worker-kinds.js';

/** The container variable that holds the per-task token codex sends (codex's provider `env_key`). */
export const GATEWAY_TOKEN_ENV = 'AGENT_RUNNER_GATEWAY_TOKEN';
/** The worker's route on the sandbox-side socket. */
export const WORKER_PREFIX = '/v1';
/** The Meta-agent's route on the host's loopback. */
export const META_PREFIX = '/meta/v1';

/** The gateway's caps (config `gateway.*`). */
export interface GatewayLimits {
  maxRequestBytes: number;
  maxHeaderBytes: number;
  requestsPerMinute: number;
  /** Connections served at once on the sandbox's socket (`gateway.maxConnections`); more wait in the queue. */
  maxConnections: number;
  /** Connections that may wait for a slot (`gateway.connectionQueue`); more are dropped as they come. */
  connectionQueue: number;
  /** How long a connection waits for a slot before it is dropped, ms (`gateway.connectionQueueWait`). */
  connectionQueueWait: number;
  /** A CONNECT tunnel with no data either way for this long is closed, ms (`gateway.idleTimeout`). */
  idleTimeout: number;
}

export const DEFAULT_GATEWAY_LIMITS: GatewayLimits = {
  maxRequestBytes: 8 * 1024 ** 2,
  maxHeaderBytes: 16 * 1024,
  requestsPerMinute: 120,
  maxConnections: 64,
  connectionQueue: 1024,
  connectionQueueWait: 120_000,
  idleTimeout: 120_000,
};

export interface GatewayUpstream {
  /** Base URL including `/v1`, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** The real key; undefined sends no Authorization (a local endpoint, or replay). */
  apiKey: string | undefined;
}

/**
 * One worker the gateway serves in the sandbox: at its own prefix, with its own upstream, protocol, key
 * header, routes and pinned models. A task whose Meta-agent may choose between workers has one per worker.
 */
export interface GatewayWorker {
  type: string;
  /** Below the relay's origin: `/v1` (codex), `/claude`. */
  prefix: string;
  protocol: WorkerProtocol;
  /** Where the worker sends its key (the per-task token) and where the real key goes upstream. */
  keyHeader: KeyHeader;
  upstream: GatewayUpstream;
  routes: readonly GatewayRoute[];
  /** Models its requests may name; undefined lets any model through (tests of the transport). */
  allowedModels?: readonly string[];
  /** The model its usage is priced at. */
  model?: string;
  /** The variable its real key comes from (named in the message when the provider refuses the key). */
  apiKeyEnv?: string;
}

export type GatewayMode =
  | { kind: 'live' }
  /** `append`: a resumed task adds its exchanges to the cassette its earlier attempts recorded. */
  | { kind: 'record'; file: string; append?: boolean }
  /** `attempt`: a resumed task replays the exchanges its own attempt recorded. */
  | { kind: 'replay'; file: string; attempt?: number };

export interface ModelGatewayOptions {
  /** The one worker (codex at `/v1`) when `workers` is not given. */
  worker?: GatewayUpstream;
  /** Every worker the sandbox may run, each at its prefix; replaces `worker`, `workerRoutes` and `allowedModels`. */
  workers?: readonly GatewayWorker[];
  /** The Meta-agent's endpoint; without it the meta route answers 404. */
  meta?: GatewayUpstream;
  mode?: GatewayMode;
  /** `redact.patterns` of the config; the keys and tokens are always redacted. */
  redactPatterns?: readonly string[];
  /** The task's redaction point; the gateway adds its keys and tokens to it (default: a new one). */
  redaction?: Redaction;
  /** Method + path pairs the worker may ask for (default: what codex needs, `POST /responses`). */
  workerRoutes?: readonly GatewayRoute[];
  /** Models the worker may name in a request; undefined lets any model through (tests of the transport). */
  allowedModels?: readonly string[];
  /** Body, header and rate caps (default {@link DEFAULT_GATEWAY_LIMITS}). */
  limits?: Partial<GatewayLimits>;
  /** The task's budget: once spent, worker requests are refused (403 `budget_exhausted`). */
  budget?: GatewayBudget;
  /** Every refused request (the first 50 of a task, see GatewayRefusals), for the journal. */
  onRefusal?: (refusal: GatewayRefusal) => void;
  /** The rate limiter's clock (tests). */
  now?: () => number;
  /** Gateway log lines (already redacted). */
  onLog?: (line: string) => void;
  /** A request has left for its upstream (or, under replay, been answered from the cassette). */
  onSent?: (kind: ExchangeKind) => void;
  /** Parent of the per-task directory (default: the OS temp dir; unix socket paths must stay short). */
  runtimeRoot?: string;
}

/** A divergence the replay met, kept for the runner to raise after the worker run. */
export type ReplayDivergence = ReplayDivergenceError;
