/**
 * Each worker run owns its processes: when it ends (normally, by timeout or interrupt), whatever it started is
 * ended before the runner looks at the sandbox again (facts, DoD, bringing commits back, reading CODEX_HOME).
 * Every process of the worker's uid goes; only the sandbox's init, keeper and relay stay, because they belong
 * to the keeper uid (see reaperArgv). Also used before and after every DoD and criteria check and after every
 * set-up command, which run the project's code and so may start daemons of their own.
 */
import type { SandboxRuntime } from '../core/ports.js';
import { reaperArgv } from './exec-killer.js';

/** What the sweep saw: `clean` when nothing is left, `survivors` when something outlived SIGKILL. */
export type StraySweep = 'clean' | 'survivors' | 'not_run';

/**
 * Ends every process of the worker's uid in the sandbox (SIGTERM, `graceMs`, SIGKILL) and waits until their
 * pids are free. It starts even when a fork bomb holds every pid of the limit (the limit is raised while it
 * runs). Never throws: a sandbox that is gone has nothing left to end, and the container's removal ends
 * whatever a failed sweep left.
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
      roomInFullPidsLimit: true,
    });
    return result.exitCode === 0 ? 'clean' : result.exitCode === 3 ? 'survivors' : 'not_run';
  } catch {
    return 'not_run';
  }
}

/**
 * Why a check did not run after a sweep that was not clean, in the words the note and the Meta-agent see; null
 * when the sweep was clean. A check that ran beside a process of the worker's could have been steered by it
 * (a file rewritten only while the tests run), so it is not run at all and counts as failed.
 */
export function sweepRefusal(sweep: StraySweep): string | null {
  if (sweep === 'clean') return null;
  return sweep === 'survivors'
    ? 'not run: a process of the worker survived SIGKILL before this check, and a check beside it is no evidence'
    : "not run: the sweep that ends the worker's processes before every check could not run in the sandbox";
}
