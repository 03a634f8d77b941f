/**
 * Nothing of the worker's runs beside a check: every DoD and criteria check in the sandbox is preceded by the
 * reaper, and a check whose sweep was not clean (something survived SIGKILL, or the reaper could not run) is
 * not run at all and counts as failed, so it can never be the evidence that completes a task.
 */
import { describe, expect, it } from 'vitest';
import type { ExecOptions, ExecResult, SandboxRuntime } from '../../src/core/ports.js';
import type { AcceptanceCriterion, TaskFacts } from '../../src/core/types.js';
import { runCriteriaChecks } from '../../src/workspace/checks/criteria-checks.js';
import { dodIsEvidenceOfDone, runDodChecks } from '../../src/workspace/checks/dod-checks.js';
import { cleanFacts, finishedExec } from '../support/core-fakes.js';

/** Records every exec in order (`sweep`, `git`, or the check's command) and answers each sweep from a queue. */
class SweepRuntime implements Pick<SandboxRuntime, 'exec'> {
  readonly calls: string[] = [];
  constructor(private readonly sweepExits: number[]) {}
  async exec(_id: string, argv: readonly string[], _options?: ExecOptions): Promise<ExecResult> {
    const result = finishedExec();
    if (argv.includes('agent-runner-reaper')) {
      this.calls.push('sweep');
      return { ...result, exitCode: this.sweepExits.shift() ?? 0 };
    }
    if (argv[0] === 'git') {
      this.calls.push('git');
      return result;
    }
    this.calls.push(argv.at(-1) ?? '');
    return result;
  }
}

const checks = [
  { name: 'lint', command: 'npm run lint', timeout: 60_000 },
  { name: 'test', command: 'npm test', timeout: 60_000 },
];

describe('the sweep before every DoD check', () => {
  it('runs before the status, before each check and after the last one', async () => {
    const runtime = new SweepRuntime([]);
    const results = await runDodChecks(runtime as unknown as SandboxRuntime, 'sb', checks);
    // After each check: its sweep, then git (tracked files it changed are put back).
    expect(runtime.calls).toEqual([
      'sweep',
      'git',
      'npm run lint',
      'sweep',
      'git',
      'npm test',
      'sweep',
      'git',
    ]);
    expect(results.map((result) => result.status)).toEqual(['passed', 'passed']);
    expect(dodIsEvidenceOfDone(results)).toBe(true);
  });

  it('a check after a sweep with survivors is not run and fails, so the DoD is no evidence', async () => {
    // The first sweep is clean; the one after `lint` (before `test`) reports a survivor (exit 3).
    const runtime = new SweepRuntime([0, 3, 0]);
    const results = await runDodChecks(runtime as unknown as SandboxRuntime, 'sb', checks);
    expect(runtime.calls).toEqual(['sweep', 'git', 'npm run lint', 'sweep', 'git', 'sweep']);
    expect(results.map((result) => result.status)).toEqual(['passed', 'failed']);
    expect(results[1]).toMatchObject({ exitCode: null, durationMs: 0 });
    expect(results[1]?.outputTail).toMatch(/^not run: a process of the worker survived SIGKILL/);
    expect(dodIsEvidenceOfDone(results)).toBe(false);
  });

  it('a reaper that cannot run (exit 126 even with room in the pids limit) runs no check', async () => {
    const runtime = new SweepRuntime([126, 126, 126]);
    const results = await runDodChecks(runtime as unknown as SandboxRuntime, 'sb', checks);
    expect(runtime.calls.filter((call) => call.startsWith('npm'))).toEqual([]);
    expect(results.map((result) => result.status)).toEqual(['failed', 'failed']);
    expect(results[0]?.outputTail).toMatch(/^not run: the sweep .* could not run/);
  });
});

describe('the sweep before every criteria check', () => {
  const facts: TaskFacts = cleanFacts('a'.repeat(40));
  const criterion = (id: string, command: string): AcceptanceCriterion => ({
    id,
    description: id,
    type: 'functional',
    critical: true,
    check: { kind: 'command', command },
  });

  it('sweeps before and after a command check; survivors fail the check without running it', async () => {
    const runtime = new SweepRuntime([0, 0, 3]);
    const results = await runCriteriaChecks(
      runtime as unknown as SandboxRuntime,
      'sb',
      [criterion('AC-1', 'npm run e2e'), criterion('AC-2', 'npm run smoke')],
      facts,
      { repoRoot: '/nonexistent', timeoutMs: 60_000 },
    );
    // After the check: its sweep, then git (tracked files it changed are put back).
    expect(runtime.calls).toEqual(['sweep', 'npm run e2e', 'sweep', 'git', 'sweep']);
    expect(results.map((result) => result.status)).toEqual(['passed', 'failed']);
    expect(results[1]).toMatchObject({ exitCode: null, critical: true });
    expect(results[1]?.reason).toMatch(/^not run: a process of the worker survived SIGKILL/);
  });
});
