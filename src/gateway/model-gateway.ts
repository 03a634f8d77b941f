/**
 * The model gateway of one task. It holds the real API keys on the host; nothing in the sandbox does.
 *
 * - Worker routes: a unix socket in a per-task host directory, mounted read-only into the sandbox, where the
 *   relay (relay-script.ts) exposes it as http://127.0.0.1:8787; each worker has its prefix (codex `/v1`,
 *   claude `/claude`). Requests carry the per-task token; the gateway swaps it for that worker's real key and
 *   streams the reply back unchanged, metering usage from a copy in the worker's protocol. The same socket
 *   is the egress proxy of the `allowlist` policy.
 * - Meta route: http://127.0.0.1:<port>/meta/v1 on the host's loopback, for the host-side openai SDK, so the
 *   Meta-agent's exchanges can be recorded and replayed too.
 * - Record/replay: `record` stores every exchange (redacted) in a cassette; `replay` serves them with no
 *   upstream and answers a request that does not match with HTTP 400 naming the divergence.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TokenUsage } from '../core/ports.js';
import { EnvironmentError, isAgentRunnerError } from '../errors.js';
import { Redaction, type Redactor } from '../notes/redact.js';
import { GatewayRefusals, jsonError } from './gateway-refusals.js';
import { RequestGuard } from './request-guard.js';
import {
  CassettePlayer,
  CassetteRecorder,
  type ExchangeKind,
  type ReplayDivergenceError,
} from './cassette.js';
import { ConnectionGate } from './connection-gate.js';
import { normalizeAllowlist } from './domain-allowlist.js';
import {
  handleConnect,
  handlePlainProxy,
  type EgressAllowlist,
  type EgressProxyContext,
} from './egress-proxy.js';
import {
  DEFAULT_GATEWAY_LIMITS,
  GATEWAY_TOKEN_ENV,
  META_PREFIX,
  WORKER_PREFIX,
  type GatewayLimits,
  type GatewayWorker,
  type ModelGatewayOptions,
} from './gateway-options.js';
import {
  forwardExchange,
  replayExchange,
  type ExchangeContext,
  type WorkerAnswer,
} from './model-exchange.js';
import {
  GATEWAY_CONTAINER_DIR,
  GATEWAY_SOCKET_NAME,
  RELAY_PORT,
  RELAY_SCRIPT,
  RELAY_SCRIPT_NAME,
} from './relay-script.js';
import { META_ROUTES, RateLimiter } from './request-policy.js';
import { gatewayWorkers, listen, trackSockets, workerGuards, type WorkerRoute } from './gateway-workers.js';
import { addTokenUsage, ZERO_TOKEN_USAGE } from '../core/usage.js';

export {
  DEFAULT_GATEWAY_LIMITS,
  GATEWAY_TOKEN_ENV,
  type GatewayLimits,
  type GatewayMode,
  type GatewayUpstream,
  type GatewayWorker,
  type ModelGatewayOptions,
  type ReplayDivergence,
} from './gateway-options.js';

/** The gateway of one task; create it with {@link ModelGateway.start}, end it with {@link close}. */
export class ModelGateway {
  /** The per-task token the worker sends instead of a key. */
  readonly workerToken = randomBytes(24).toString('hex');
  /** The key the host-side openai SDK uses for the meta route (checked, then replaced by the real one). */
  readonly metaToken = randomBytes(24).toString('hex');
  /** Redacts keys, tokens and the configured patterns; use it for anything derived from gateway traffic. */
  readonly redact: Redactor;
  /** Refused requests: answered, logged and recorded. */
  readonly refusals: GatewayRefusals;

  private readonly sockets = new Set<Socket>();
  /** Aborted by close(): every upstream request still in flight ends with it. */
  private readonly closing = new AbortController();
  private readonly servers: Server[] = [];
  private gate: ConnectionGate | null = null;
  private allowlist: EgressAllowlist = null;
  private workerUsage: TokenUsage = ZERO_TOKEN_USAGE;
  private counters: Record<ExchangeKind, number> = { worker: 0, meta: 0 };
  private divergences: ReplayDivergenceError[] = [];
  private recorder: CassetteRecorder | null = null;
  private player: CassettePlayer | null = null;
  private metaPort = 0;
  private readonly limits: GatewayLimits;
  /** Each worker the sandbox may run, with the guard of its prefix (longest prefix first). */
  private readonly workerRoutes: WorkerRoute[];
  private readonly metaGuard: RequestGuard | null;
  private budgetRefusal: string | null = null;
  private lastWorkerAnswer: WorkerAnswer | null = null;

  private constructor(
    private readonly options: ModelGatewayOptions,
    /** The per-task host directory holding the socket and the relay script; mount it at GATEWAY_CONTAINER_DIR. */
    readonly hostDir: string,
  ) {
    const redaction = options.redaction ?? new Redaction();
    const workers = gatewayWorkers(options);
    redaction.add(
      [
        ...workers.map((worker) => worker.upstream.apiKey),
        options.meta?.apiKey,
        this.workerToken,
        this.metaToken,
      ],
      options.redactPatterns ?? [],
    );
    this.redact = redaction.redact;
    this.refusals = new GatewayRefusals(this.redact, (line) => this.log(line), options.onRefusal);
    this.limits = { ...DEFAULT_GATEWAY_LIMITS, ...options.limits };
    this.workerRoutes = workerGuards(workers, {
      token: this.workerToken,
      limits: this.limits,
      refusals: this.refusals,
      rate: new RateLimiter(this.limits.requestsPerMinute, 60_000, options.now),
      ...(options.budget ? { budget: options.budget } : {}),
      onBudgetRefused: (reason) => {
        this.budgetRefusal ??= reason;
      },
    });
    this.metaGuard =
      options.meta === undefined
        ? null
        : new RequestGuard({
            route: 'meta',
            prefix: META_PREFIX,
            routes: META_ROUTES,
            token: this.metaToken,
            // The worker's token is worth nothing on the Meta-agent's route, whatever it asks for.
            foreignToken: this.workerToken,
            maxRequestBytes: this.limits.maxRequestBytes,
            refusals: this.refusals,
          });
  }

  /** Creates the directory, the socket (worker + proxy) and the loopback meta listener. */
  static async start(options: ModelGatewayOptions): Promise<ModelGateway> {
    const dir = await mkdtemp(path.join(options.runtimeRoot ?? tmpdir(), 'agent-runner-gw-'));
    const gateway = new ModelGateway(options, dir);
    try {
      const mode = options.mode ?? { kind: 'live' };
      if (mode.kind === 'replay') gateway.player = await CassettePlayer.load(mode.file, mode.attempt);
      if (mode.kind === 'record')
        gateway.recorder = mode.append
          ? await CassetteRecorder.continuing(mode.file, gateway.redact)
          : new CassetteRecorder(mode.file, gateway.redact);
      await gateway.listen();
    } catch (error) {
      await gateway.close();
      if (isAgentRunnerError(error)) throw error;
      throw new EnvironmentError(
        'sandbox_failed',
        `Could not start the model gateway in ${dir}: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    return gateway;
  }

  /** The socket on the host. */
  get socketPath(): string {
    return path.join(this.hostDir, GATEWAY_SOCKET_NAME);
  }

  /** The Meta-agent's baseURL for the openai SDK (use {@link metaToken} as its apiKey). */
  get metaBaseUrl(): string {
    return `http://127.0.0.1:${this.metaPort}${META_PREFIX}`;
  }

  /** Codex's provider inside the sandbox: base_url and the variable holding {@link workerToken}. */
  codexProvider(port = RELAY_PORT): { baseUrl: string; envKey: string } {
    return { baseUrl: `http://127.0.0.1:${port}${WORKER_PREFIX}`, envKey: GATEWAY_TOKEN_ENV };
  }

  /** The origin the relay serves the gateway at inside the sandbox (a worker's prefix follows it). */
  relayOrigin(port = RELAY_PORT): string {
    return `http://127.0.0.1:${port}`;
  }

  /** The bind mount that brings the socket and the relay into the sandbox (read-only). */
  mount(): { hostPath: string; containerPath: string; readOnly: true } {
    return { hostPath: this.hostDir, containerPath: GATEWAY_CONTAINER_DIR, readOnly: true };
  }

  /** Hosts the egress proxy lets through from now on; null (the default) refuses every proxy request. */
  setEgressAllowlist(hosts: readonly string[] | null): void {
    this.allowlist = hosts === null ? null : normalizeAllowlist(hosts);
  }

  /** Worker token usage since the last call (sum of `response.completed` usage), and resets it. */
  takeWorkerUsage(): TokenUsage {
    const usage = this.workerUsage;
    this.workerUsage = ZERO_TOKEN_USAGE;
    return usage;
  }

  /** Why a worker request was refused for the budget since the last call (then forgotten), or null. */
  takeBudgetRefusal(): string | null {
    const reason = this.budgetRefusal;
    this.budgetRefusal = null;
    return reason;
  }

  /** The upstream's answer to the latest worker request since the last call (then forgotten), or null. */
  takeWorkerAnswer(): WorkerAnswer | null {
    const answer = this.lastWorkerAnswer;
    this.lastWorkerAnswer = null;
    return answer;
  }

  /** Under replay: the first divergence met since the last call (then forgotten), or null. */
  takeDivergence(): ReplayDivergenceError | null {
    const first = this.divergences[0] ?? null;
    this.divergences = [];
    return first;
  }

  /** Under replay: recorded exchanges not yet served, per kind. */
  replayRemaining(): Record<ExchangeKind, number> | null {
    return this.player?.remaining() ?? null;
  }

  /** The most sandbox connections served at once and waiting at once since the start (see ConnectionGate). */
  get connectionPeak(): { active: number; waiting: number } {
    return { ...(this.gate?.peak ?? { active: 0, waiting: 0 }) };
  }

  /** Stops listening, cuts open connections, writes the cassette, removes the directory. */
  async close(): Promise<void> {
    // In-flight upstream requests (a hanging model) must not keep the process alive after the task.
    this.closing.abort();
    this.gate?.closeWaiting();
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(
      this.servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    );
    await this.recorder?.flush();
    await rm(this.hostDir, { recursive: true, force: true });
  }

  private meterWorker(usage: TokenUsage, model?: string): void {
    this.workerUsage = addTokenUsage(this.workerUsage, usage);
    this.options.budget?.meterWorker(usage, model);
  }

  private log(line: string): void {
    this.options.onLog?.(this.redact(line));
  }

  private track(server: Server): Server {
    return trackSockets(server, this.sockets, this.servers);
  }

  private async listen(): Promise<void> {
    await writeFile(path.join(this.hostDir, RELAY_SCRIPT_NAME), RELAY_SCRIPT, { mode: 0o644 });
    const serverOptions = { noDelay: true, maxHeaderSize: this.limits.maxHeaderBytes };
    const sandboxSide = http.createServer(
      { ...serverOptions, keepAliveTimeout: 5_000 },
      (request, response) => {
        this.onSandboxRequest(request, response).catch((error: unknown) =>
          this.fail(response, 'sandbox request', error),
        );
      },
    );
    const proxyContext = this.proxyContext;
    sandboxSide.on('connect', (request: IncomingMessage, client, head: Buffer) =>
      handleConnect(proxyContext, request, client, head),
    );
    // Held-open connections cost the runner a descriptor each: past the cap they wait in a bounded queue.
    this.gate = ConnectionGate.serving(sandboxSide, this.limits, (line) => this.log(line));
    await listen(this.track(this.gate.server), this.socketPath);
    // The worker's uid differs from ours: it must traverse the directory and connect to the socket.
    await chmod(this.hostDir, 0o755);
    await chmod(this.socketPath, 0o666);

    sandboxSide.on('clientError', (error: Error & { code?: string }, socket) =>
      this.refusals.clientError('worker', error, socket, this.limits.maxHeaderBytes),
    );
    const hostSide = this.track(
      http.createServer(serverOptions, (request, response) => {
        this.onMetaRequest(request, response).catch((error: unknown) =>
          this.fail(response, 'meta request', error),
        );
      }),
    );
    hostSide.on('clientError', (error: Error & { code?: string }, socket) =>
      this.refusals.clientError('meta', error, socket, this.limits.maxHeaderBytes),
    );
    await listen(hostSide, { port: 0, host: '127.0.0.1' });
    this.metaPort = (hostSide.address() as AddressInfo).port;
  }

  /** What the egress proxy (CONNECT, plain HTTP, the registry route) is told. */
  private get proxyContext(): EgressProxyContext {
    return {
      allowlist: () => this.allowlist,
      log: (line: string) => this.log(line),
      maxBodyBytes: this.limits.maxRequestBytes,
      tunnelIdleMs: this.limits.idleTimeout,
    };
  }

  private fail(response: ServerResponse, what: string, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.log(`gateway ${what} failed: ${message}`);
    jsonError(response, 502, `agent-runner gateway: ${this.redact(message)}`, 'gateway_error');
  }

  private async onSandboxRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = request.url ?? '/';
    if (/^[a-z]+:\/\//i.test(url)) {
      const target = new URL(url);
      // A tool that proxies everything (no NO_PROXY) still reaches the gateway itself.
      const local =
        ['127.0.0.1', 'localhost'].includes(target.hostname) && target.port === String(RELAY_PORT);
      if (!local) {
        await handlePlainProxy(this.proxyContext, request, response, target);
        return;
      }
      // The target as sent, not URL's normalised pathname: `..` and escapes must meet the route checks.
      request.url = url.replace(/^[a-z]+:\/\/[^/?#]*/i, '') || '/';
    }
    // The worker whose prefix the target starts with (a segment boundary); otherwise the last one's guard
    // refuses it. No route is ever chosen by anything but the raw target.
    const target = request.url ?? '/';
    const { worker, guard } =
      this.workerRoutes.find(({ worker: candidate }) => target.startsWith(`${candidate.prefix}/`)) ??
      (this.workerRoutes.at(-1) as WorkerRoute);
    const admitted = await guard.admit(request, response);
    // The allowed route's own path is forwarded, never the text the worker sent.
    if (admitted !== null)
      await this.exchange('worker', admitted.route.path, request, admitted.body, response, worker);
  }

  private async onMetaRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.metaGuard === null) {
      jsonError(response, 404, `agent-runner gateway: no route ${request.url ?? '/'}`, 'not_found');
      return;
    }
    const admitted = await this.metaGuard.admit(request, response);
    if (admitted !== null) await this.exchange('meta', admitted.route.path, request, admitted.body, response);
  }

  /** One model exchange: replayed from the cassette, or forwarded (and recorded). */
  private async exchange(
    kind: ExchangeKind,
    subPath: string,
    request: IncomingMessage,
    body: Buffer,
    response: ServerResponse,
    worker?: GatewayWorker,
  ): Promise<void> {
    const method = request.method ?? 'GET';
    const index = this.counters[kind];
    this.counters[kind] = index + 1;
    const exchange = { kind, index, method, subPath, body, ...(worker ? { worker } : {}) };
    if (this.player !== null) {
      replayExchange(this.player, exchange, response, this.exchangeContext);
      this.options.onSent?.(kind);
      return;
    }
    const upstreamConfig = kind === 'worker' ? worker?.upstream : this.options.meta;
    if (upstreamConfig === undefined) throw new Error(`no ${kind} upstream`);
    await forwardExchange(upstreamConfig, exchange, request, response, this.exchangeContext);
  }

  /** What a model exchange (replayed or forwarded) is told. */
  private get exchangeContext(): ExchangeContext {
    return {
      closing: this.closing.signal,
      redact: this.redact,
      log: (line: string) => this.log(line),
      onSent: (kind: ExchangeKind) => this.options.onSent?.(kind),
      meterWorker: (usage: TokenUsage, model?: string) => this.meterWorker(usage, model),
      recorder: this.recorder,
      onWorkerAnswer: (answer: WorkerAnswer) => {
        this.lastWorkerAnswer = answer;
      },
      onDivergence: (error: ReplayDivergenceError) => {
        this.divergences.push(error);
        this.log(error.message);
      },
    };
  }
}
