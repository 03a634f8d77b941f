/**
 * One call that gives the composition root everything the gateway brings to a task: the running gateway,
 * the network plan, what the sandbox spec needs, codex's provider, the Meta-agent's route, and the setup
 * phase. app.ts wires these into DockerSandboxProvider, CodexWorkerAdapter and the Meta-agent's model.
 */
import type { Config } from '../config/schema.js';
import type { SetupCommandReport } from '../core/events.js';
import type { GatewayRefusal } from '../core/events.js';
import type { MountSpec, SandboxNetwork, SandboxRuntime } from '../core/ports.js';
import { costOf } from '../core/usage.js';
import { Ledger } from '../core/ledger.js';
import { EnvironmentError, UserError } from '../errors.js';
import { tailOf } from '../sandbox/output-tail.js';
import { describeSetupFailure } from '../sandbox/setup-failure.js';
import type { Redaction } from '../notes/redact.js';
import { ModelGateway } from './model-gateway.js';
import { detectPackageRegistries } from './package-registries.js';
import { configuredWorkers, type WorkerProfile } from '../config/workers.js';
import { ledgerBudget } from './gateway-budget.js';
import {
  codexProxyOverrides,
  gatewaySandboxSpec,
  planSandboxNetwork,
  prepareSandboxNetwork,
  type SandboxNetworkPlan,
} from './sandbox-network.js';

/** Characters of a failed set-up command's output kept for its report and its error. */
const SETUP_TAIL_CHARS = 1_500;

export interface TaskGatewayInput {
  config: Pick<
    Config,
    'meta' | 'worker' | 'workers' | 'sandbox' | 'redact' | 'gateway' | 'limits' | 'prices'
  >;
  env: NodeJS.ProcessEnv;
  /** The user's repository root, where the package manifests are looked for. */
  repoRoot: string;
  /** `--record FILE` / `--replay FILE` (at most one). */
  record?: string;
  replay?: string;
  /** A resumed task: `record` adds to the cassette of the earlier attempts instead of starting it over. */
  appendRecord?: boolean;
  /** The task attempt (1 for `run`); `replay` answers from that attempt's exchanges. */
  attempt?: number;
  /** Gateway log lines, already redacted. */
  onLog?: (line: string) => void;
  /** A Meta-agent or worker request has left for its upstream (or been answered by the cassette). */
  onSent?: (kind: 'meta' | 'worker') => void;
  /** The task's redaction point (the gateway adds its keys and tokens). */
  redaction?: Redaction;
  /** Each refused request (redacted), for the journal. */
  onRefusal?: (refusal: GatewayRefusal) => void;
  /**
   * The task's (or the project's) ledger: the gateway meters the worker's responses into it and refuses
   * further worker requests once its tokens or cost (or its project's) are spent. Default: a ledger of
   * `config.limits` of its own (tests of the gateway alone).
   */
  ledger?: Ledger;
}

export interface TaskGateway {
  gateway: ModelGateway;
  plan: SandboxNetworkPlan;
  /** For SandboxModelAccess: merge env, append mounts, use network and keeper; no extra hosts are needed. */
  access: {
    env: Record<string, string>;
    mounts: MountSpec[];
    network: SandboxNetwork;
    extraHosts: string[];
    keeper: string[];
  };
  /** For CodexWorkerAdapter's provider (add the retry settings). */
  codexProvider: { baseUrl: string; envKey: string };
  /** The gateway's origin inside the sandbox; a worker's base URL is this plus its kind's prefix. */
  relayOrigin: string;
  /** For CodexWorkerAdapter's `configOverrides`: the proxy variables for codex's commands under allowlist. */
  codexConfigOverrides: string[];
  /** For the Meta-agent's OpenAI SDK: baseURL and apiKey (the gateway adds the real key). */
  meta: { baseUrl: string; apiKey: string };
  /**
   * Runs `sandbox.setup` under `sandbox.setupNetwork`, then locks the sandbox into `sandbox.network`. Throws
   * EnvironmentError('sandbox_failed') naming the failed command, its exit code and the policy.
   */
  setup(
    runtime: SandboxRuntime,
    sandboxId: string,
    options: {
      workdir: string;
      logDir?: string;
      signal?: AbortSignal;
      /** Each command as it starts and ends (the output tail, redacted, on failure only). */
      onReport?: (report: SetupCommandReport) => void;
      /** The set-up commands when they differ from `sandbox.setup` (the toolchain's come first). */
      commands?: readonly string[];
    },
  ): Promise<void>;
  close(): Promise<void>;
}

/** Starts the task's gateway from the validated config. */
export async function startTaskGateway(input: TaskGatewayInput): Promise<TaskGateway> {
  const { config, env } = input;
  if (input.record !== undefined && input.replay !== undefined) {
    throw new UserError('usage', 'Give either --record or --replay, not both.');
  }
  const profiles = configuredWorkers(config);
  const defaultModel = profiles[0]?.model ?? config.meta.model;
  const ledger = input.ledger ?? new Ledger(config.limits, { now: () => Date.now() });
  const budget = ledgerBudget(ledger, (usage, model) => costOf(usage, model ?? defaultModel, config.prices));
  const gateway = await ModelGateway.start({
    // Each configured worker at its prefix, with its own upstream, key, routes and pinned models.
    workers: profiles.map((profile) => ({
      type: profile.type,
      prefix: profile.kind.prefix,
      protocol: profile.protocol,
      keyHeader: profile.kind.keyHeader,
      upstream: { baseUrl: profile.baseUrl, apiKey: env[profile.apiKeyEnv] || undefined },
      routes: profile.kind.routes(profile.allowedModels, profile.protocol),
      // Gemini names its model in the path: the route is its pin, the body has no model to check.
      ...(profile.kind.modelInBody ? { allowedModels: profile.allowedModels } : {}),
      model: profile.model,
      apiKeyEnv: profile.apiKeyEnv,
    })),
    meta: { baseUrl: config.meta.baseUrl, apiKey: env[config.meta.apiKeyEnv] || undefined },
    mode:
      input.replay !== undefined
        ? { kind: 'replay', file: input.replay, attempt: input.attempt ?? 1 }
        : input.record !== undefined
          ? { kind: 'record', file: input.record, append: input.appendRecord ?? false }
          : { kind: 'live' },
    redactPatterns: config.redact.patterns,
    ...(input.redaction ? { redaction: input.redaction } : {}),
    onLog: input.onLog,
    limits: config.gateway,
    budget,
    ...(input.onRefusal ? { onRefusal: input.onRefusal } : {}),
    ...(input.onSent ? { onSent: input.onSent } : {}),
  });
  const registries =
    config.sandbox.setupNetwork === undefined ? await detectPackageRegistries(input.repoRoot) : [];
  const plan = planSandboxNetwork(config.sandbox, registries);
  const spec = gatewaySandboxSpec(gateway, plan);
  return {
    gateway,
    plan,
    access: {
      env: spec.env,
      mounts: spec.mounts,
      network: spec.network,
      extraHosts: [],
      keeper: spec.keeper,
    },
    codexProvider: gateway.codexProvider(),
    relayOrigin: gateway.relayOrigin(),
    codexConfigOverrides: codexProxyOverrides(plan.worker.policy),
    meta: { baseUrl: gateway.metaBaseUrl, apiKey: gateway.metaToken },
    setup: (runtime, sandboxId, options) =>
      runGatewaySetup(gateway, plan, config, runtime, sandboxId, options),
    close: () => gateway.close(),
  };
}

/**
 * A worker whose endpoint is not on this machine needs its key before anything starts: without it every
 * request of that worker would be refused after the sandbox was built. A loopback endpoint may need none.
 */
export function requireWorkerKeys(
  config: Pick<Config, 'meta' | 'worker' | 'workers'>,
  env: NodeJS.ProcessEnv,
): void {
  for (const profile of configuredWorkers(config)) requireWorkerKey(profile, env);
}

function requireWorkerKey(profile: WorkerProfile, env: NodeJS.ProcessEnv): void {
  if (env[profile.apiKeyEnv]) return;
  let host = '';
  try {
    host = new URL(profile.baseUrl).hostname;
  } catch {
    return;
  }
  if (['localhost', '127.0.0.1', '::1', '[::1]'].includes(host)) return;
  const block = `workers.${profile.type}`;
  throw new UserError(
    'config_invalid',
    `The ${profile.type} worker has no key: ${profile.apiKeyEnv} is not set (${profile.baseUrl} needs one). ` +
      `Export ${profile.apiKeyEnv}=<your key>, or set ${block}.apiKeyEnv to the variable that holds it.`,
    { details: { worker: profile.type, apiKeyEnv: profile.apiKeyEnv } },
  );
}

/** Runs the set-up commands under the set-up network policy, then locks the sandbox into its own. */
async function runGatewaySetup(
  gateway: ModelGateway,
  plan: SandboxNetworkPlan,
  config: TaskGatewayInput['config'],
  runtime: SandboxRuntime,
  sandboxId: string,
  options: Parameters<TaskGateway['setup']>[2],
): Promise<void> {
  const policy =
    plan.setup.policy === 'allowlist'
      ? `allowlist (${plan.setup.allowlist.join(', ') || 'no host'})`
      : plan.setup.policy;
  // The same tail as a check's (src/sandbox/output-tail.ts), redacted: set-up output may echo a secret.
  const redactedTail = (result: { stderrTail: string; stdoutTail: string }): string =>
    gateway.redact(tailOf(result.stdoutTail, result.stderrTail, SETUP_TAIL_CHARS));
  const results = await prepareSandboxNetwork(runtime, sandboxId, gateway, plan, {
    setup: options.commands ?? config.sandbox.setup ?? [],
    workdir: options.workdir,
    timeoutMs: config.sandbox.setupTimeout,
    logDir: options.logDir,
    signal: options.signal,
    onCommandStarted: (index, command) => options.onReport?.({ index, command, policy, phase: 'started' }),
    onCommandFinished: (index, command, result) =>
      options.onReport?.({
        index,
        command,
        policy,
        phase: 'finished',
        durationMs: result.durationMs,
        exitCode: result.exitCode,
        timedOut: result.timedOut,
        ...(result.exitCode === 0 ? {} : { outputTail: redactedTail(result) }),
      }),
  });
  const failed = results.find((entry) => entry.result.exitCode !== 0);
  if (failed === undefined) return;
  const { summary, hint } = describeSetupFailure(failed.command, failed.result, policy);
  const tail = redactedTail(failed.result);
  throw new EnvironmentError(
    'sandbox_failed',
    `${gateway.redact(summary)}. ${hint}${tail === '' ? '' : `\n${tail}`}`,
    { details: { command: failed.command, exitCode: failed.result.exitCode } },
  );
}
