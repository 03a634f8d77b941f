import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { formatSummary } from '../../src/cli/progress.js';
import { failureHint, firstErrorLine } from '../../src/core/failure-hints.js';
import { rootCauseOf } from '../../src/core/root-cause.js';
import { summaryOf, type TaskRecord } from '../../src/core/task-record.js';
import type { CriterionCheckResult, DodOutcome } from '../../src/core/types.js';
import { ZERO_USAGE } from '../../src/core/usage.js';
import { writeTaskNote } from '../../src/notes/note-writer.js';

const ESC = '\u001b';
const RED = `${ESC}[31m`;
const RESET = `${ESC}[39m`;

function dod(results: DodOutcome['results']): DodOutcome {
  return { status: 'failed', ranOnDirtyTree: false, source: 'package.json', results };
}

const PASSING = {
  name: 'typecheck',
  command: 'npm run typecheck',
  status: 'passed' as const,
  exitCode: 0,
  durationMs: 5_800,
  outputTail: 'ok',
  tests: { passed: 42, failed: 0, skipped: 1 },
};

const FAILING = {
  name: 'test',
  command: 'npm test',
  status: 'failed' as const,
  exitCode: 1,
  durationMs: 1_200,
  // As a journal of an older version holds it: colour sequences still in.
  outputTail: [
    '> demo@1.0.0 test',
    '> node --test',
    '',
    `${RED}✖ slugify works${RESET}`,
    `  Error: Cannot find module 'left-pad'`,
    '    at Module._resolveFilename (node:internal/modules/cjs/loader:1140:15)',
  ].join('\n'),
  tests: { passed: 3, failed: 1, skipped: 0 },
};

function criterionCheck(overrides: Partial<CriterionCheckResult>): CriterionCheckResult {
  return {
    criterionId: 'AC1',
    critical: true,
    kind: 'command',
    target: 'pytest -q',
    status: 'failed',
    exitCode: 127,
    durationMs: 10,
    outputTail: 'bash: line 1: pytest: command not found',
    reason: 'command not found in the sandbox',
    ranOnDirtyTree: false,
    ...overrides,
  };
}

function record(overrides: Partial<TaskRecord>): TaskRecord {
  return {
    taskId: 'EV-1',
    prd: '# Demo\n\nDo it.',
    state: 'NEEDS_REVIEW',
    reason: 'stalled: the same decision with no change',
    plan: { title: 'Demo', acceptanceCriteria: [] },
    task: null,
    runs: [],
    metaCalls: 2,
    usage: { meta: ZERO_USAGE, worker: ZERO_USAGE, total: ZERO_USAGE },
    startedAt: 0,
    finishedAt: 60_000,
    question: null,
    preservedRef: null,
    workerType: 'codex',
    runDir: '/r/.agent-runner/runs/EV-1',
    error: null,
    basis: [],
    criteria: [],
    ...overrides,
  };
}

function withDod(outcome: DodOutcome, overrides: Partial<TaskRecord> = {}): TaskRecord {
  return record({
    runs: [
      {
        index: 1,
        decision: { action: 'run_worker', reason: 'go', usedPatterns: [] },
        startedAt: 0,
        durationMs: 1000,
        mode: 'exec',
        exitCode: 0,
        timedOut: false,
        failed: false,
        threadId: null,
        commands: [],
        finalMessage: null,
        errors: [],
        usage: ZERO_USAGE,
        dod: outcome,
        refusals: [],
      },
    ],
    ...overrides,
  });
}

async function note(rec: TaskRecord): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ar-evidence-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const written = await writeTaskNote(rec, {
    agentRunnerDir: dir,
    repository: '/r',
    prdPath: 'spec.md',
    workerModel: 'm',
  });
  return readFile(written.path, 'utf8');
}

describe('root cause', () => {
  it('names the first failing DoD check, its exit code, its informative error line and the fix', () => {
    const cause = rootCauseOf(dod([PASSING, FAILING]), [criterionCheck({})]);
    expect(cause).toMatchObject({
      check: 'DoD check test',
      command: 'npm test',
      exitCode: 1,
      errorLine: "Error: Cannot find module 'left-pad'",
    });
    expect(cause?.hint).toMatch(
      /A Node module \(`left-pad`\) is missing: install the dependencies in sandbox\.setup/,
    );
  });

  it('falls back to the first failing critical criterion check; exit 127 names the missing program', () => {
    const checks = [criterionCheck({ criterionId: 'AC0', critical: false }), criterionCheck({})];
    const cause = rootCauseOf(dod([PASSING]), checks);
    expect(cause?.check).toBe("criterion AC1's command check");
    expect(cause?.hint).toMatch(/^`pytest` is not installed in the sandbox: add its toolchain/);
  });

  it('is null when nothing failed', () => {
    expect(rootCauseOf(dod([PASSING]), [criterionCheck({ status: 'passed', exitCode: 0 })])).toBeNull();
  });
});

describe('hints: one table for set-up and checks', () => {
  it.each([
    ['/usr/bin/python3: No module named pip', 1, /python3-pip/],
    ["ModuleNotFoundError: No module named 'requests'", 1, /`requests` is not installed.*python3 -m venv/],
    ['error: externally-managed-environment', 1, /python3 -m venv/],
    ["Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /w/a.js", 1, /`zod`/],
    ['sh: 1: go: not found', 127, /`go` is not installed/],
    ['', 127, /A command is not installed/],
  ])('%s', (output, exitCode, hint) => {
    expect(failureHint({ output, exitCode }, 'check')).toMatch(hint);
    expect(failureHint({ output, exitCode }, 'setup')).toMatch(hint);
  });

  it('a check with no known cause gets no made-up fix; a set-up one is told how to reproduce', () => {
    expect(failureHint({ output: 'AssertionError: 1 == 2', exitCode: 1 }, 'check')).toBeNull();
    expect(failureHint({ output: 'AssertionError: 1 == 2', exitCode: 1 }, 'setup')).toMatch(/fresh clone/);
  });

  it('the error line skips blank lines, npm metadata and stack frames', () => {
    expect(firstErrorLine('\n\nnpm ERR! code 1\n    at x (y.js:1:1)\nTypeError: boom\n')).toBe(
      'TypeError: boom',
    );
  });
});

describe('the note and the closing lines show the evidence', () => {
  it('test counts for passing and failing checks, no ESC byte, the root cause with its fix', async () => {
    const failing = dod([PASSING, FAILING]);
    const text = await note(withDod(failing, { rootCause: rootCauseOf(failing, []) }));
    expect(text).not.toContain(ESC);
    expect(text).toContain('| typecheck | `npm run typecheck` | ✅ passed (42 passed, 1 skipped) | 5.8s |');
    expect(text).toContain('| test | `npm test` | ❌ failed (exit 1; 3 passed, 1 failed) | 1.2s |');
    // The output tail is shown without its colour, not as `\x1b[31m` noise.
    expect(text).toContain('✖ slugify works\n');
    expect(text).not.toContain('\\x1b');
    expect(text).toMatch(
      /\| Root cause \| DoD check test \(`npm test`\) failed \(exit 1; 3 passed, 1 failed\): Error: Cannot find module 'left-pad'\. Fix: A Node module/,
    );
  });

  it('a lone control left in output is still shown as an escape, never raw', async () => {
    const bell = { ...FAILING, outputTail: `ring\u0007 and ${ESC}[${ESC}[31mnested` };
    const text = await note(withDod(dod([bell])));
    expect(text).not.toContain(ESC);
    expect(text).not.toContain('\u0007');
    expect(text).toContain('ring\\x07');
  });

  it('a set-up failure: the State row holds its first line, the Error section its output without colour', async () => {
    const message =
      'sandbox.setup command `pip install --user -r requirements.txt` exited 1 under network policy open: ' +
      '/usr/bin/python3: No module named pip. This Python has no pip: install `python3-pip python3-venv`\n' +
      `${RED}ERROR${RESET} the tail of its output`;
    const text = await note(
      record({ state: 'FAILED', reason: message, error: { code: 'sandbox_failed', message } }),
    );
    expect(text).not.toContain(ESC);
    expect(text).toMatch(
      /^\| \*\*State\*\* \| \*\*FAILED\*\* \(sandbox\.setup command .*No module named pip\..*python3-venv\\`\) \|$/m,
    );
    expect(text).toContain('```text\nERROR the tail of its output\n```');
  });

  it('closing lines: the reason’s first line whole, the cause and the fix', () => {
    const failing = dod([FAILING]);
    const summary = summaryOf(
      withDod(failing, {
        reason: `sandbox.setup command \`npm ci\` exited 1 under network policy open: ${'npm ERR! some long words '.repeat(8)}.\nnpm ERR! the output tail`,
        rootCause: rootCauseOf(failing, []),
      }),
      { notePath: '/r/.agent-runner/task-EV-1.md', exitCode: 3, headSha: null },
    );
    const lines = formatSummary(summary);
    expect(lines[0]).toMatch(/^NEEDS_REVIEW after 1m: sandbox\.setup command .* \(more in the note\)$/);
    expect(lines[0]).not.toContain('the output tail');
    expect(lines[1]).toBe(
      "  cause:    DoD check test (`npm test`) failed (exit 1; 3 passed, 1 failed): Error: Cannot find module 'left-pad'",
    );
    expect(lines[2]).toMatch(/^ {2}fix: {6}A Node module/);
  });
});
