/**
 * The acceptance criteria's checks, run as facts. `command` runs in the sandbox like a DoD check (the same
 * clean shell, timeout, exit code, output tail, every process of the worker's ended before and after); `file_exists` is observed on the task branch with host git (objects only: no path
 * the worker controls is followed, a symbolic link counts as absent); `test` runs the named test through the
 * framework detected on the task branch, or is "not executable" with the reason. Any other kind (`manual`,
 * `playwright`...) is kept as written and recorded as not executed, for the assessor to judge.
 */
import path from 'node:path';
import type { ExecResult, SandboxRuntime } from '../../core/ports.js';
import type {
  AcceptanceCriterion,
  CriterionCheckResult,
  DodCheckResult,
  DodCheckStatus,
  DodOutcome,
  TaskFacts,
} from '../../core/types.js';
import { tailOf } from '../../sandbox/output-tail.js';
import { endStrayProcesses, sweepRefusal } from '../../sandbox/stray-processes.js';
import { putBackTrackedChanges, rewroteNotice } from './check-rewrites.js';
import { cleanShellArgv } from './dod-checks.js';
import { splitNul, tryGit } from '../git/git-command.js';
import { parseTestCounts, passedTestCount, readCheckOutput } from './test-counts.js';
import { SANDBOX_WORKDIR, sandboxGitEnvironment } from '../layout.js';
import { FRAMEWORKS_LOOKED_FOR, namedTestCommand, type TestFramework } from './test-frameworks.js';
import { testLocations, type TestLocation, type TreeReader } from './test-location.js';

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
  /** The DoD that ran on this same tree just before: a criterion with the same command takes its result. */
  dod?: DodOutcome;
}

/**
 * The result of a DoD check that ran `command` on this tree, as a criterion's: the same command in the same
 * clean shell on the same checkout says the same thing, so it is not run twice (the demo ran `npm test` twice
 * per validation). Null when no DoD check ran exactly this command.
 */
export function dodResultFor(
  dod: DodOutcome | undefined,
  command: string,
): Pick<
  CriterionCheckResult,
  'target' | 'status' | 'exitCode' | 'durationMs' | 'outputTail' | 'tests' | 'reason'
> | null {
  const same = dod?.results.find(
    (result): result is DodCheckResult & { status: Exclude<DodCheckStatus, 'skipped'> } =>
      result.command.trim() === command.trim() && result.status !== 'skipped',
  );
  if (!same) return null;
  return {
    target: command,
    status: same.status,
    exitCode: same.exitCode,
    durationMs: same.durationMs,
    outputTail: same.outputTail,
    ...(same.tests ? { tests: same.tests } : {}),
    reason: `the DoD check "${same.name}" ran this command on this tree; its result, not run again`,
  };
}

type Check = NonNullable<AcceptanceCriterion['check']>;

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

/** The task branch's tree for test detection: its file names, and blob text read from objects only. */
async function branchTree(repoRoot: string, headSha: string): Promise<TreeReader> {
  const names = await tryGit(['ls-tree', '-r', '-z', '--name-only', headSha], { cwd: repoRoot });
  const files = names.exitCode === 0 ? splitNul(names.stdout) : [];
  return {
    files,
    // Read as a blob: no filter, no textconv, nothing of the worker's runs on the host.
    read: async (file) => {
      const blob = await tryGit(['cat-file', 'blob', `${headSha}:${file}`], { cwd: repoRoot });
      return blob.exitCode === 0 ? blob.stdout : null;
    },
  };
}

/**
 * One command for the test's locations: each in its own subshell, the first failing exit code kept, so a
 * package that fails is not hidden by one that passes.
 */
export function locatedTestCommand(
  locations: readonly TestLocation[],
  testName: string,
  file?: string,
): string {
  const commands = locations.map(({ framework, dir }) =>
    namedTestCommand(
      framework,
      testName,
      file === undefined ? undefined : path.posix.relative(dir, file),
      dir,
    ),
  );
  if (commands.length === 1) return commands[0]!;
  return `rc=0; ${commands.map((command) => `(${command}) || { status=$?; [ $rc -ne 0 ] || rc=$status; }`).join('; ')}; exit $rc`;
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
  let tree: Promise<TreeReader> | undefined;
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
    let counted: TestFramework[] = [];
    const given = check.kind === 'command' || check.kind === 'test' ? check.command : undefined;
    const reused = given ? dodResultFor(options.dod, given) : null;
    if (reused) {
      results.push({ ...base, ...reused });
      continue;
    }
    if (given) command = given;
    else if (check.kind === 'test' && check.test_name) {
      tree ??= branchTree(options.repoRoot, facts.headSha);
      const file = check.file === undefined ? undefined : (repositoryPath(check.file) ?? undefined);
      const locations = await testLocations(await tree, file);
      if (locations.length === 0) {
        results.push({
          ...base,
          target: `test "${check.test_name}"`,
          status: 'not_executable',
          reason: `no test framework detected on the task branch (looked for ${FRAMEWORKS_LOOKED_FOR}, at the root, above the test's file and in the workspace packages)`,
        });
        continue;
      }
      command = locatedTestCommand(locations, check.test_name, file);
      counted = locations.map((location) => location.framework);
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
      ...(await runInSandbox(runtime, sandboxId, command, counted, deadline, options, !facts.dirty)),
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

/** A check that changed tracked files: failed, whatever it exited with, the files named first in its output. */
function rewroteResult(
  command: string,
  result: ExecResult,
  rewrote: NonNullable<CriterionCheckResult['rewrote']>,
): Pick<
  CriterionCheckResult,
  'target' | 'status' | 'exitCode' | 'durationMs' | 'outputTail' | 'reason' | 'rewrote'
> {
  return {
    target: command,
    durationMs: result.durationMs,
    outputTail: `${rewroteNotice(rewrote)}\n${tailOf(result.stdoutTail, result.stderrTail, TAIL_CHARS)}`,
    status: 'failed',
    exitCode: result.exitCode,
    reason: `changed ${rewrote.count} tracked file(s) (put back): it did not check the commit`,
    rewrote,
  };
}

async function runInSandbox(
  runtime: SandboxRuntime,
  sandboxId: string,
  command: string,
  frameworks: readonly TestFramework[],
  deadline: number,
  options: CriteriaChecksOptions,
  cleanTree: boolean,
): Promise<
  Pick<
    CriterionCheckResult,
    'target' | 'status' | 'exitCode' | 'durationMs' | 'outputTail' | 'tests' | 'reason' | 'rewrote'
  >
> {
  const left = deadline - Date.now();
  const timeoutMs = Math.max(1000, Math.min(options.checkTimeoutMs ?? CRITERION_CHECK_TIMEOUT_MS, left));
  // Nothing of the worker's runs beside the check: a sweep first, and no check when it was not clean.
  const refusal = sweepRefusal(await endStrayProcesses(runtime, sandboxId, options.graceMs ?? 5_000));
  if (refusal !== null)
    return {
      target: command,
      status: 'failed',
      exitCode: null,
      durationMs: 0,
      outputTail: '',
      reason: refusal,
    };
  // Same shell as the DoD: no startup file the worker can write, a fresh HOME; and nothing it starts outlives it.
  const result = await runtime.exec(sandboxId, cleanShellArgv(command, SANDBOX_WORKDIR, 'use'), {
    workdir: SANDBOX_WORKDIR,
    env: sandboxGitEnvironment(),
    timeoutMs,
    graceMs: options.graceMs ?? 5_000,
    tailBytes: TAIL_CHARS * 4,
    signal: options.signal,
  });
  await endStrayProcesses(runtime, sandboxId, options.graceMs ?? 5_000);
  // Checks are checks (src/workspace/checks/check-rewrites.ts): tracked files it changed are put back, and it failed.
  const rewrote = cleanTree ? await putBackTrackedChanges(runtime, sandboxId, options.signal) : null;
  if (rewrote?.count) return rewroteResult(command, result, rewrote);
  const outputTail = tailOf(result.stdoutTail, result.stderrTail, TAIL_CHARS);
  // Read once: the counts are shown to the person; whether a named test ran is decided by passedTestCount below.
  const output = readCheckOutput(result);
  const tests = parseTestCounts(output);
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
  if (frameworks.length > 0) {
    // The most any framework's summary says: two parsers may read the same summary line (pytest's and vitest's).
    const named = [...new Set(frameworks)].join(', ');
    const passed = Math.max(0, ...frameworks.map((framework) => passedTestCount(framework, output) ?? 0));
    if (!passed)
      return {
        ...common,
        status: 'failed',
        exitCode: 0,
        reason: `exit 0 but no test ran (${named} found no test of that name)`,
      };
    return { ...common, status: 'passed', exitCode: 0, reason: `${passed} test(s) passed (${named})` };
  }
  return { ...common, status: 'passed', exitCode: 0, reason: '' };
}
