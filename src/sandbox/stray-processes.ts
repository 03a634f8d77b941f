/**
 * Each worker run owns its processes: when it ends (normally, by timeout or interrupt), whatever it started is
 * ended before the runner looks at the sandbox again (facts, DoD, bringing commits back, reading CODEX_HOME).
 * Only the sandbox's own init and keeper/relay survive (see reaperArgv). Also used after every DoD check and
 * set-up command, which run the project's code and so may start daemons of their own.
 */
import type { SandboxRuntime } from '../core/ports.js';
import { reaperArgv } from './exec-killer.js';

/** What the sweep saw: `clean` when nothing is left, `survivors` when something outlived SIGKILL. */
export type StraySweep = 'clean' | 'survivors' | 'not_run';

/**
 * Ends every process in the sandbox except its init and keeper (SIGTERM, `graceMs`, SIGKILL). Never throws: a
 * sandbox that is gone has nothing left to end, and the container's removal ends whatever a failed sweep left.
 */
export async function endStrayProcesses(
  runtime: SandboxRuntime,
  sandboxId: string,
  graceMs = 1_000,
): Promise<StraySweep> {
  try {
    const result = await runtime.exec(sandboxId, reaperArgv(graceMs), {
      workdir: '/',
      timeoutMs: graceMs + 30_000,
      graceMs: 1_000,
    });
    return result.exitCode === 0 ? 'clean' : result.exitCode === 3 ? 'survivors' : 'not_run';
  } catch {
    return 'not_run';
  }
}
