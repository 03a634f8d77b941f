/**
 * Network policies of a sandbox, as Docker networking plus the gateway's egress proxy:
 *
 * | policy       | container network | egress proxy          | proxy env vars |
 * |--------------|-------------------|-----------------------|----------------|
 * | gateway-only | none (loopback)   | refuses everything    | no             |
 * | allowlist    | none (loopback)   | listed hosts only     | yes            |
 * | open         | bridge            | refuses (not needed)  | no             |
 *
 * The model is always reached through the relay and the gateway's socket. The setup phase may run under a
 * different policy than the worker phase; Docker cannot connect a container created with mode `none`, so a
 * sandbox with an `open` phase is created on bridge and disconnected for the other phase.
 */
import path from 'node:path';
import type { ExecResult, MountSpec, SandboxNetwork, SandboxRuntime } from '../core/ports.js';
import type { NetworkPolicy } from '../config/schema.js';
import { InternalError } from '../errors.js';
import { BASH_WITHOUT_STARTUP_FILES } from '../sandbox/no-startup-files.js';
import { endStrayProcesses } from '../sandbox/stray-processes.js';
import { isHostAllowed, normalizeAllowlist } from './domain-allowlist.js';
import { registryRouteUrl } from './egress-proxy.js';
import { GATEWAY_TOKEN_ENV, type ModelGateway } from './model-gateway.js';
import { RELAY_PORT, relayKeeper } from './relay-script.js';

export interface PhasePolicy {
  policy: NetworkPolicy;
  /** Normalised hosts, for `allowlist`; empty otherwise. */
  allowlist: string[];
}

export interface SandboxNetworkPlan {
  /** The network to create the container with. */
  create: SandboxNetwork;
  setup: PhasePolicy;
  worker: PhasePolicy;
}

/** The proxy variables of the `allowlist` policy (npm, pip, curl, git and codex honour them). */
export function proxyEnv(port = RELAY_PORT): Record<string, string> {
  const proxy = `http://127.0.0.1:${port}`;
  const noProxy = '127.0.0.1,localhost';
  return {
    HTTPS_PROXY: proxy,
    HTTP_PROXY: proxy,
    https_proxy: proxy,
    http_proxy: proxy,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    npm_config_proxy: proxy,
    npm_config_https_proxy: proxy,
  };
}

/**
 * The set-up phase's variables under `allowlist`: the proxy, and npm's registry through the gateway's
 * registry route when registry.npmjs.org is allowed (npm, pnpm and yarn 1 read `npm_config_registry`; npm's
 * default `replace-registry-host` sends the lockfile's registry.npmjs.org URLs there too).
 */
export function setupProxyEnv(allowlist: readonly string[], port = RELAY_PORT): Record<string, string> {
  const proxy = `http://127.0.0.1:${port}`;
  return {
    ...proxyEnv(port),
    // yarn 2+ reads neither HTTPS_PROXY nor npm's settings: its own variables (a detected `yarn install`).
    YARN_HTTPS_PROXY: proxy,
    YARN_HTTP_PROXY: proxy,
    ...(isHostAllowed(NPM_REGISTRY_HOST, allowlist)
      ? { npm_config_registry: registryRouteUrl(NPM_REGISTRY_HOST) }
      : {}),
  };
}

const NPM_REGISTRY_HOST = 'registry.npmjs.org';

/**
 * Codex `-c` overrides that give the worker's commands the proxy variables under `allowlist`. Codex 0.169.0
 * drops HTTP(S)_PROXY, NO_PROXY and npm_config_* from the environment of the commands it runs (seen), so the
 * container's environment alone does not reach them; `shell_environment_policy.set` puts them back. Empty for
 * the other policies.
 */
export function codexProxyOverrides(policy: NetworkPolicy, port = RELAY_PORT): string[] {
  if (policy !== 'allowlist') return [];
  const entries = Object.entries(proxyEnv(port)).map(([key, value]) => `${key}=${JSON.stringify(value)}`);
  return [`shell_environment_policy.set={${entries.join(',')}}`];
}

/**
 * The plan for a task. `sandbox.setupNetwork` unset means: allowlist of `sandbox.allowlist` plus the
 * registries the repository uses (see detectPackageRegistries).
 */
export function planSandboxNetwork(
  sandbox: { network: NetworkPolicy; allowlist: readonly string[]; setupNetwork?: NetworkPolicy },
  registries: readonly string[],
): SandboxNetworkPlan {
  const workerAllowlist = normalizeAllowlist(sandbox.allowlist);
  const phase = (policy: NetworkPolicy, hosts: readonly string[]): PhasePolicy => ({
    policy,
    allowlist: policy === 'allowlist' ? normalizeAllowlist(hosts) : [],
  });
  const setup = phase(sandbox.setupNetwork ?? 'allowlist', [...sandbox.allowlist, ...registries]);
  const worker = phase(sandbox.network, workerAllowlist);
  const anyOpen = setup.policy === 'open' || worker.policy === 'open';
  return { create: anyOpen ? { mode: 'bridge' } : { mode: 'none' }, setup, worker };
}

/** What the sandbox spec needs for the gateway: add these to SandboxSpec (mounts appended, env merged). */
export function gatewaySandboxSpec(
  gateway: ModelGateway,
  plan: SandboxNetworkPlan,
): { network: SandboxNetwork; keeper: string[]; mounts: MountSpec[]; env: Record<string, string> } {
  return {
    network: plan.create,
    keeper: relayKeeper(),
    mounts: [gateway.mount()],
    env: {
      [GATEWAY_TOKEN_ENV]: gateway.workerToken,
      ...(plan.worker.policy === 'allowlist' ? proxyEnv() : {}),
    },
  };
}

/** Puts the sandbox and the gateway in `phase`'s policy. */
export async function applyNetworkPhase(
  runtime: SandboxRuntime,
  sandboxId: string,
  gateway: ModelGateway,
  plan: SandboxNetworkPlan,
  phase: PhasePolicy,
): Promise<void> {
  gateway.setEgressAllowlist(phase.policy === 'allowlist' ? phase.allowlist : null);
  if (plan.create.mode === 'none') return;
  if (runtime.setNetwork === undefined) {
    throw new InternalError('This SandboxRuntime cannot change networks; the open policy needs setNetwork.');
  }
  await runtime.setNetwork(sandboxId, phase.policy === 'open' ? plan.create : { mode: 'none' });
}

/** Waits until the relay inside the sandbox accepts connections (it starts with the container). */
export async function waitForRelay(
  runtime: SandboxRuntime,
  sandboxId: string,
  timeoutMs = 10_000,
): Promise<void> {
  const tries = Math.max(1, Math.ceil(timeoutMs / 100));
  const result = await runtime.exec(
    sandboxId,
    [
      '/bin/bash',
      '-c',
      `for i in $(seq ${tries}); do (exec 3<>/dev/tcp/127.0.0.1/${RELAY_PORT}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`,
    ],
    { timeoutMs: timeoutMs + 5_000 },
  );
  if (result.exitCode !== 0) {
    throw new InternalError(
      `The gateway relay did not start in sandbox ${sandboxId} (is node in the image?): ${result.stderrTail}`,
    );
  }
}

export interface SetupCommandResult {
  command: string;
  result: ExecResult;
}

export interface PrepareSandboxNetworkOptions {
  /** `sandbox.setup` commands, each run with bash (no startup files) in `workdir`. */
  setup: readonly string[];
  workdir: string;
  /** For all setup commands together (`sandbox.setupTimeout`). */
  timeoutMs: number;
  /** Where each command's full output goes (`setup-<n>.stdout.log` / `.stderr.log`); none when omitted. */
  logDir?: string;
  onStdoutLine?: (line: string) => void;
  onStderrLine?: (line: string) => void;
  /** Before each command (1-based index), and after it with its result. */
  onCommandStarted?: (index: number, command: string) => void;
  onCommandFinished?: (index: number, command: string, result: ExecResult) => void;
  signal?: AbortSignal;
}

/**
 * After create: waits for the relay, runs the setup commands under the setup policy (stopping at the first
 * failure), then locks the sandbox into the worker policy. Returns each command's result; the caller decides
 * what a failed setup means. The worker policy is applied even when setup fails.
 */
export async function prepareSandboxNetwork(
  runtime: SandboxRuntime,
  sandboxId: string,
  gateway: ModelGateway,
  plan: SandboxNetworkPlan,
  options: PrepareSandboxNetworkOptions,
): Promise<SetupCommandResult[]> {
  const results: SetupCommandResult[] = [];
  try {
    if (options.setup.length > 0) {
      await applyNetworkPhase(runtime, sandboxId, gateway, plan, plan.setup);
      await waitForRelay(runtime, sandboxId);
      const deadline = Date.now() + options.timeoutMs;
      const env = plan.setup.policy === 'allowlist' ? setupProxyEnv(plan.setup.allowlist) : {};
      for (const [index, command] of options.setup.entries()) {
        const log = (stream: string): string | undefined =>
          options.logDir === undefined
            ? undefined
            : path.join(options.logDir, `setup-${index + 1}.${stream}.log`);
        // No login profile, no ~/.bashrc, no BASH_ENV/ENV. HOME stays: set-up runs in a fresh container before
        // the first worker run, so nothing in it is the worker's yet, and tools installed there stay usable.
        options.onCommandStarted?.(index + 1, command);
        const result = await runtime.exec(sandboxId, [...BASH_WITHOUT_STARTUP_FILES, command], {
          workdir: options.workdir,
          env,
          stdoutPath: log('stdout'),
          stderrPath: log('stderr'),
          timeoutMs: Math.max(0, deadline - Date.now()),
          onStdoutLine: options.onStdoutLine,
          onStderrLine: options.onStderrLine,
          signal: options.signal,
        });
        // A set-up command's leftovers (a postinstall daemon) must not run on into the worker's phase.
        await endStrayProcesses(runtime, sandboxId);
        results.push({ command, result });
        options.onCommandFinished?.(index + 1, command, result);
        if (result.exitCode !== 0) break;
      }
    }
  } finally {
    await applyNetworkPhase(runtime, sandboxId, gateway, plan, plan.worker);
  }
  if (options.setup.length === 0) await waitForRelay(runtime, sandboxId);
  return results;
}
