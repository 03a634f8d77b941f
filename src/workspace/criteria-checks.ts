/**
 * The acceptance criteria's checks, run as facts. `command` runs in the sandbox like a DoD check (the same
 * clean shell, timeout, exit code, output tail, stray processes ended); `file_exists` is observed on the task branch with host git (objects only: no path
 * the worker controls is followed, a symbolic link counts as absent); `test` runs the named test through the
 * framework detected on the task branch, or is "not executable" with the reason. Any other kind (`manual`,
 * `playwright`...) is kept as written and recorded as not executed, for the assessor to judge.
 */
import type { SandboxRuntime } from '../core/ports.js';
import type { AcceptanceCriterion, CriterionCheckResult, TaskFacts } from '../core/types.js';
import { stripTerminalSequences } from '../notes/terminal-text.js';
import { parseTestCounts } from './test-counts.js';
import { endStrayProcesses } from '../sandbox/stray-processes.js';
import { cleanShellArgv } from './dod-checks.js';
import { splitNul, tryGit } from './git-command.js';
import { SANDBOX_WORKDIR, sandboxGitEnvironment } from './layout.js';
import {
  detectTestFramework,
  FRAMEWORKS_LOOKED_FOR,
  namedTestCommand,
  passedTestCount,
  type TestFramework,
} from './test-frameworks.js';

/** A check's own timeout when nothing shorter applies (the DoD's default too). */
export const CRITERION_CHECK_TIMEOUT_MS = 600_000;
const TAIL_CHARS = 4000;

export interface CriteriaChecksOptions {
  /** The user's repository: the task branch's commits are read there, never from the sandbox. */
  repoRoot: string;
  signal?: AbortSignal;
  /** Wall clock left for all the checks together. */
  timeoutMs: number;
  graceMs?: number;
  /** Per-check timeout (default 10 minutes), clipped to what is left of `timeoutMs`. */
  checkTimeoutMs?: number;
}

type Check = NonNullable<AcceptanceCriterion['check']>;

/** The output tail recorded, without its terminal sequences, as the DoD's (src/workspace/dod-checks.ts). */
function tailOf(rawStdout: string, rawStderr: string): string {
  const stdout = stripTerminalSequences(rawStdout);
  const stderr = stripTerminalSequences(rawStderr);
  const combined =
    stderr.trim().length > 0 ? `${stdout.trimEnd()}\n--- stderr ---\n${stderr.trimEnd()}` : stdout.trimEnd();
  return combined.length > TAIL_CHARS ? `…${combined.slice(combined.length - TAIL_CHARS)}` : combined;
}

/** A repository-relative path as the model wrote it, or null when it could point outside (`..`, `/x`). */
export function repositoryPath(file: string): string | null {
  const cleaned = file
    .trim()
    .replace(/^\.\/+/, '')
    .replace(/\/+$/, '');
  if (!cleaned || cleaned.startsWith('/') || cleaned.startsWith('-') || cleaned.includes('\0')) return null;
  if (cleaned.split('/').some((segment) => segment === '..' || segment === '.' || segment === ''))
    return null;
  return cleaned;
}

/** Looks a path up in the task branch's tree (git objects only). */
export async function fileOnBranch(
  repoRoot: string,
  headSha: string,
  file: string,
): Promise<{ exists: boolean; reason: string }> {
  const safe = repositoryPath(file);
  if (safe === null)
    return { exists: false, reason: `\`${file}\` is not a path inside the repository; not looked up` };
  const listed = await tryGit(['ls-tree', '-z', headSha, '--', `:(literal)${safe}`], { cwd: repoRoot });
  const entry = splitNul(listed.stdout)[0];
  if (listed.exitCode !== 0 || !entry)
    return { exists: false, reason: `not in the task branch's tree at ${headSha.slice(0, 12)}` };
  const [mode = '', type = ''] = entry.split(/\s/);
  if (mode === '120000')
    return { exists: false, reason: 'is a symbolic link on the task branch; links are not followed' };
  if (type === 'commit') return { exists: false, reason: 'is a submodule, not a file of this repository' };
  return { exists: true, reason: `${type === 'tree' ? 'a directory' : 'a file'} at ${headSha.slice(0, 12)}` };
}

async function frameworkOf(repoRoot: string, headSha: string): Promise<TestFramework | null> {
  const names = await tryGit(['ls-tree', '-z', '--name-only', headSha], { cwd: repoRoot });
  const files = names.exitCode === 0 ? splitNul(names.stdout) : [];
  // Read as a blob: no filter, no textconv, nothing of the worker's runs on the host.
  const packageJson = files.includes('package.json')
    ? await tryGit(['cat-file', 'blob', `${headSha}:package.json`], { cwd: repoRoot })
    : null;
  return detectTestFramework({
    packageJson: packageJson?.exitCode === 0 ? packageJson.stdout : null,
    files,
  });
}

/** Runs the criteria's checks in plan order; criteria without a check are left out. */
export async function runCriteriaChecks(
  runtime: SandboxRuntime,
  sandboxId: string,
  criteria: readonly AcceptanceCriterion[],
  facts: TaskFacts,
  options: CriteriaChecksOptions,
): Promise<CriterionCheckResult[]> {
  const deadline = Date.now() + options.timeoutMs;
  const results: CriterionCheckResult[] = [];
  let framework: Promise<TestFramework | null> | undefined;
  for (const criterion of criteria) {
    const check = criterion.check;
    if (!check) continue;
    const base = {
      criterionId: criterion.id,
      critical: criterion.critical,
      kind: check.kind,
      exitCode: null,
      durationMs: 0,
      outputTail: '',
      ranOnDirtyTree: facts.dirty,
    };
    if (options.signal?.aborted) {
      results.push({ ...base, target: targetOf(check), status: 'not_executed', reason: 'interrupted' });
      continue;
    }
    if (check.kind === 'file_exists' && check.file) {
      const started = Date.now();
      const found = await fileOnBranch(options.repoRoot, facts.headSha, check.file);
      results.push({
        ...base,
        target: check.file,
        status: found.exists ? 'passed' : 'failed',
        durationMs: Date.now() - started,
        reason: found.reason,
        // Observed in the committed tree: the sandbox's uncommitted files play no part.
        ranOnDirtyTree: false,
      });
      continue;
    }
    let command: string;
    let counted: TestFramework | null = null;
    if (check.kind === 'command' && check.command) command = check.command;
    else if (check.kind === 'test' && check.command) command = check.command;
    else if (check.kind === 'test' && check.test_name) {
      framework ??= frameworkOf(options.repoRoot, facts.headSha);
      const detected = await framework;
      const file = check.file === undefined ? undefined : (repositoryPath(check.file) ?? undefined);
      if (detected === null) {
        results.push({
          ...base,
          target: `test "${check.test_name}"`,
          status: 'not_executable',
          reason: `no test framework detected on the task branch (looked for ${FRAMEWORKS_LOOKED_FOR})`,
        });
        continue;
      }
      command = namedTestCommand(detected, check.test_name, file);
      counted = detected;
    } else {
      results.push({
        ...base,
        target: targetOf(check),
        status: 'not_executed',
        reason: `agent-runner does not execute checks of kind \`${check.kind}\`; kept for the assessment`,
      });
      continue;
    }
    results.push({
      ...base,
      ...(await runInSandbox(runtime, sandboxId, command, counted, deadline, options)),
    });
  }
  return results;
}

function targetOf(check: Check): string {
  return (
    check.command ??
    ([check.file, check.test_name ? `"${check.test_name}"` : undefined].filter(Boolean).join(' ') ||
      check.kind)
  );
}

async function runInSandbox(
  runtime: SandboxRuntime,
  sandboxId: string,
  command: string,
  framework: TestFramework | null,
  deadline: number,
  options: CriteriaChecksOptions,
): Promise<
  Pick<
    CriterionCheckResult,
    'target' | 'status' | 'exitCode' | 'durationMs' | 'outputTail' | 'tests' | 'reason'
  >
> {
  const left = deadline - Date.now();
  const timeoutMs = Math.max(1000, Math.min(options.checkTimeoutMs ?? CRITERION_CHECK_TIMEOUT_MS, left));
  // Same shell as the DoD: no startup file the worker can write, a fresh HOME; and nothing it starts outlives it.
  const result = await runtime.exec(sandboxId, cleanShellArgv(command), {
    workdir: SANDBOX_WORKDIR,
    env: sandboxGitEnvironment(),
    timeoutMs,
    graceMs: options.graceMs ?? 5_000,
    tailBytes: TAIL_CHARS * 4,
    signal: options.signal,
  });
  await endStrayProcesses(runtime, sandboxId, options.graceMs ?? 5_000);
  const outputTail = tailOf(result.stdoutTail, result.stderrTail);
  // Shown to the person; whether a named test ran is still decided by passedTestCount below.
  const tests = parseTestCounts(`${result.stdoutTail}\n${result.stderrTail}`);
  const common = { target: command, durationMs: result.durationMs, outputTail, ...(tests ? { tests } : {}) };
  if (result.timedOut)
    return {
      ...common,
      status: 'timeout',
      exitCode: null,
      reason: `timed out after ${Math.round(timeoutMs / 1000)} s`,
    };
  if (result.interrupted)
    return { ...common, status: 'failed', exitCode: result.exitCode, reason: 'interrupted' };
  if (result.exitCode !== 0)
    return {
      ...common,
      status: 'failed',
      exitCode: result.exitCode,
      reason: result.exitCode === 127 ? 'command not found in the sandbox' : `exit ${result.exitCode}`,
    };
  if (framework) {
    const passed = passedTestCount(framework, `${result.stdoutTail}\n${result.stderrTail}`);
    if (!passed)
      return {
        ...common,
        status: 'failed',
        exitCode: 0,
        reason: `exit 0 but no test ran (${framework} found no test of that name)`,
      };
    return { ...common, status: 'passed', exitCode: 0, reason: `${passed} test(s) passed (${framework})` };
  }
  return { ...common, status: 'passed', exitCode: 0, reason: '' };
}
