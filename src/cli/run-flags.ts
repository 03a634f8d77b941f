/** The flags `run`, `resume`, `followup` and the client commands share, as a configuration layer. */
import type { RunCommandOptions } from './run-command.js';

/** `--runtime`, which `run` and `resume` share (sandbox.runtime; also AGENT_RUNNER_RUNTIME). */
export const RUNTIME_FLAG = '--runtime <runc|runsc|auto>';
export const RUNTIME_FLAG_HELP =
  "the sandbox's OCI runtime: runsc puts gVisor's kernel between the worker and the host (sandbox.runtime; also AGENT_RUNNER_RUNTIME)";

/** The config layer of the flags `run` and `resume` share. */
export function flagsLayer(
  options: Pick<
    RunCommandOptions,
    'model' | 'worker' | 'maxIterations' | 'timeout' | 'push' | 'pr' | 'forge' | 'runtime' | 'closes'
  >,
): Record<string, unknown> {
  const maxIterations = options.maxIterations === undefined ? undefined : Number(options.maxIterations);
  return {
    meta: { model: options.model },
    worker: { type: options.worker },
    sandbox: { runtime: options.runtime },
    limits: {
      maxIterations:
        maxIterations !== undefined && Number.isFinite(maxIterations) ? maxIterations : options.maxIterations,
      wallClock: options.timeout,
    },
    deliver: {
      push: options.push || undefined,
      pr: options.pr || undefined,
      forge: options.forge,
      closes: options.closes,
    },
  };
}
