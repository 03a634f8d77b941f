/**
 * Which OCI runtime a task's containers run under (`sandbox.runtime`): `runc`, the host's kernel behind the
 * hardening of container-options.ts, or `runsc`, gVisor's user-space kernel between the worker and the host.
 * Read → pure choice: the engine's registered runtimes are read once per client (`docker info`), and
 * `chooseContainerRuntime` decides from them and the configuration, with the reason the note records.
 *
 * A runsc registration agent-runner can use has gVisor's network off and host unix sockets allowed
 * (scripts/ensure-runsc.sh writes it): Docker 20.10 refuses to start a runsc container with gVisor's network
 * on in the root network namespace, even with `--network none`, and the gateway's socket is bind-mounted
 * from the host (without `--host-uds` a connect to it is EPERM).
 */
import type Docker from 'dockerode';
import type { Config } from '../config/schema.js';
import type { SandboxRuntimeChoice } from '../core/records.js';
import { EnvironmentError } from '../errors.js';

/** The runtime name agent-runner asks the engine for, and the arguments its registration must carry. */
export const RUNSC = 'runsc';
export const RUNSC_REQUIRED_ARGS = ['--network=none', '--host-uds=all'] as const;

/** How to get a usable registration, for messages. */
export const RUNSC_FIX =
  'register it with `sudo bash scripts/ensure-runsc.sh` in the agent-runner checkout (installs Debian\'s runsc, adds runtimes.runsc with "runtimeArgs": ["--network=none", "--host-uds=all"] to /etc/docker/daemon.json and reloads dockerd with SIGHUP)';

/** The engine's runtimes by name, each with the arguments it is registered with. */
export type EngineRuntimes = Readonly<Record<string, { runtimeArgs?: readonly string[] }>>;

/** What the configuration asks for: the runtime key and the network policies of the two phases. */
export type RuntimeRequest = Pick<Config['sandbox'], 'runtime' | 'network' | 'setupNetwork'>;

/** Why the engine's runsc cannot be used (null: it can). */
export function runscProblem(engine: EngineRuntimes): string | null {
  const entry = engine[RUNSC];
  if (!entry) return 'runsc is not registered with the Docker engine';
  const args = entry.runtimeArgs ?? [];
  const missing = RUNSC_REQUIRED_ARGS.filter((arg) => !args.includes(arg));
  if (missing.length > 0)
    return `runsc is registered with the Docker engine without ${missing.join(' and ')} in its runtimeArgs`;
  return null;
}

/**
 * The runtime for a task. Pure. `runsc` asked and unusable is an error naming the fix (the configuration
 * already refuses runsc with an open network phase); `auto` takes runsc when usable and no phase is open,
 * else runc, and says why either way.
 */
export function chooseContainerRuntime(
  request: RuntimeRequest,
  engine: EngineRuntimes,
): SandboxRuntimeChoice {
  if (request.runtime === 'runc') return { runtime: 'runc', reason: 'sandbox.runtime: runc' };
  const problem = runscProblem(engine);
  if (request.runtime === 'runsc') {
    if (problem)
      throw new EnvironmentError(
        'sandbox_failed',
        `sandbox.runtime is runsc, but ${problem}: ${RUNSC_FIX}; or set sandbox.runtime: runc (or auto).`,
        { details: { engineRuntimes: Object.keys(engine) } },
      );
    return { runtime: 'runsc', reason: 'sandbox.runtime: runsc' };
  }
  const open = (['network', 'setupNetwork'] as const).find((key) => request[key] === 'open');
  if (open)
    return {
      runtime: 'runc',
      reason: `sandbox.runtime: auto, and sandbox.${open} is open, which needs the container's own network (a runsc sandbox has loopback only)`,
    };
  if (problem) return { runtime: 'runc', reason: `sandbox.runtime: auto, and ${problem}` };
  return {
    runtime: 'runsc',
    reason: 'sandbox.runtime: auto, and runsc is registered with the Docker engine',
  };
}

const engineRuntimesOf = new WeakMap<Docker, Promise<EngineRuntimes>>();

/** The engine's registered runtimes, read once per client (`docker info`); `{}` when it does not say. */
export function engineRuntimes(docker: Docker): Promise<EngineRuntimes> {
  let known = engineRuntimesOf.get(docker);
  if (!known) {
    known = docker.info().then((info: { Runtimes?: EngineRuntimes }) => info.Runtimes ?? {});
    // A failed read is not remembered: the next task asks again.
    known.catch(() => engineRuntimesOf.delete(docker));
    engineRuntimesOf.set(docker, known);
  }
  return known;
}

/** The runtime a task's containers run under, from the configuration and what the engine offers. */
export async function resolveContainerRuntime(
  docker: Docker,
  request: RuntimeRequest,
): Promise<SandboxRuntimeChoice> {
  if (request.runtime === 'runc') return chooseContainerRuntime(request, {});
  return chooseContainerRuntime(request, await engineRuntimes(docker));
}
