/**
 * A finished task on disk without running one: a real git repository with the task branch `agent-runner/<ID>`
 * holding a commit, the task's journal (task_started, a recorded run with facts, DoD and criteria checks, the
 * baseline, task_finished) and its note with the digest recorded as the runner records it. For delivery tests,
 * which start where a task ends.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { StampedEvent, TaskStartOptions } from '../../src/core/events.js';
import type { RunRecord, TaskSummary } from '../../src/core/types.js';
import { createTempRepo, type TempRepo } from './git-repo.js';

export interface FinishedTask {
  repo: TempRepo;
  taskId: string;
  branch: string;
  notePath: string;
  runDir: string;
  /** The commit the task branch points at. */
  head: string;
  /** Adds a commit to the task branch (as a resumed task would) and returns it. */
  addCommit(message: string): string;
}

const ZERO = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 };

function usage(tokens: number, costUsd: number) {
  return { ...ZERO, inputTokens: tokens, outputTokens: Math.round(tokens / 10), costUsd };
}

/** A repository whose task `taskId` ended in `state`, with one worker run's evidence. */
export async function createFinishedTask(
  options: {
    taskId?: string;
    state?: TaskSummary['state'];
    title?: string;
    extraSummary?: Partial<TaskSummary>;
    /** What the task was started with beyond the PRD and base (`forge`...). */
    startOptions?: Partial<TaskStartOptions>;
  } = {},
): Promise<FinishedTask> {
  const taskId = options.taskId ?? 'add-slugify-1a2b3c';
  const state = options.state ?? 'COMPLETE';
  const repo = await createTempRepo({ 'README.md': '# demo\n' });
  const baseSha = repo.git('rev-parse', 'HEAD').trim();
  const branch = `agent-runner/${taskId}`;
  repo.git('checkout', '-q', '-b', branch);
  await repo.commit('Add slugify', { 'src/slugify.js': 'export const slugify = (s) => s.toLowerCase();\n' });
  const head = repo.git('rev-parse', 'HEAD').trim();
  repo.git('checkout', '-q', 'main');
  const stateDir = path.join(repo.root, '.agent-runner');
  const runDir = path.join(stateDir, 'runs', taskId);
  mkdirSync(runDir, { recursive: true });
  writeFileSync(path.join(repo.root, '.git', 'info', 'exclude'), '.agent-runner/\n');
  const dodResult = {
    name: 'test',
    command: 'npm test',
    status: 'passed' as const,
    exitCode: 0,
    durationMs: 1200,
    outputTail: 'ok',
    tests: { passed: 4, failed: 0, skipped: 0 },
    base: { status: 'failed' as const, exitCode: 1, verdict: 'green_before' as const },
  };
  const criterionResult = {
    criterionId: 'AC1',
    critical: true,
    kind: 'command',
    target: 'node -e "1"',
    status: 'passed' as const,
    exitCode: 0,
    durationMs: 80,
    outputTail: '',
    reason: '',
    ranOnDirtyTree: false,
  };
  const run: RunRecord = {
    index: 1,
    decision: { action: 'run_worker', reason: 'implement', usedPatterns: [] },
    startedAt: Date.now() - 60_000,
    durationMs: 42_000,
    mode: 'exec',
    workerType: 'codex',
    model: 'gpt-5.5-mini',
    exitCode: 0,
    timedOut: false,
    failed: false,
    threadId: 't-1',
    commands: [],
    finalMessage: 'done',
    errors: [],
    usage: usage(12_000, 0.0123),
    facts: {
      baseSha,
      headSha: head,
      commits: [{ sha: head, subject: 'Add slugify' }],
      dirty: false,
      uncommitted: [],
      changedFiles: ['src/slugify.js'],
      diffStat: ' src/slugify.js | 1 +\n 1 file changed, 1 insertion(+)',
      diff: '',
      scopeViolations: [],
      taskBranch: { name: branch, headSha: head },
    },
    dod: { status: 'passed', results: [dodResult], ranOnDirtyTree: false, source: 'config' },
    criteriaChecks: [criterionResult],
    refusals: [],
  };
  const notePath = path.join(stateDir, `task-${taskId}.md`);
  const summary: TaskSummary = {
    taskId,
    title: options.title ?? 'Add slugify',
    state,
    reason: state === 'COMPLETE' ? 'all criteria satisfied' : 'a check failed',
    branch,
    headSha: head,
    notePath,
    worktreePath: null,
    runs: 1,
    metaCalls: 3,
    usage: { meta: usage(3_000, 0.002), worker: usage(12_000, 0.0123), total: usage(15_000, 0.0143) },
    durationMs: 61_000,
    exitCode: state === 'COMPLETE' ? 0 : 3,
    error: null,
    basis: [],
    criteria: [
      {
        id: 'AC1',
        description: 'slugify lowercases its input',
        type: 'unit',
        critical: true,
        check: { kind: 'command', command: 'node -e "1"' },
        status: 'passed',
        comment: 'checked',
        checkResult: criterionResult,
      },
    ],
    ...options.extraSummary,
  };
  const note = `# ${summary.title}\n\n| **State** | **${state}** |\n\n## Pick up from here\n\nNothing left.\n`;
  writeFileSync(notePath, note);
  const at = new Date().toISOString();
  const events: StampedEvent[] = [
    {
      type: 'task_started',
      taskId,
      branch,
      baseSha,
      worktreePath: path.join(stateDir, 'worktrees', taskId),
      dirtyStart: false,
      options: {
        prdPath: 'prd.md',
        prd: '# Add slugify\n',
        base: 'main',
        dodSkipped: false,
        ...options.startOptions,
      },
      at,
    },
    {
      type: 'baseline',
      baseSha,
      dod: { status: 'failed', results: [], ranOnDirtyTree: false, source: 'config' },
      at,
    },
    { type: 'run_recorded', run: 1, record: run, at },
    {
      type: 'note_written',
      path: notePath,
      sha256: createHash('sha256').update(note).digest('hex'),
      at,
    },
    { type: 'task_finished', summary, at },
  ];
  writeFileSync(
    path.join(runDir, 'events.jsonl'),
    events.map((event) => JSON.stringify(event)).join('\n') + '\n',
  );
  return {
    repo,
    taskId,
    branch,
    notePath,
    runDir,
    head,
    addCommit(message) {
      repo.git('checkout', '-q', branch);
      const file = `${message.replace(/\W+/g, '-')}.txt`;
      writeFileSync(path.join(repo.root, file), `${message}\n`);
      repo.git('add', '--', file);
      repo.git('commit', '-q', '-m', message);
      const sha = repo.git('rev-parse', 'HEAD').trim();
      repo.git('checkout', '-q', 'main');
      return sha;
    },
  };
}

/** The task ends again, COMPLETE at its new head, as a resume that finished it writes in its journal. */
export function finishAgainComplete(task: FinishedTask, head: string): void {
  const journal = path.join(task.runDir, 'events.jsonl');
  const lines = readFileSync(journal, 'utf8').trim().split('\n');
  const finished = JSON.parse(lines.at(-1) as string) as { summary: Record<string, unknown> };
  const summary = {
    ...finished.summary,
    state: 'COMPLETE',
    exitCode: 0,
    headSha: head,
    reason: 'all criteria satisfied',
  };
  appendFileSync(
    journal,
    `${JSON.stringify({ type: 'task_finished', summary, at: new Date().toISOString() })}\n`,
  );
}

/** Puts the plan the Meta-agent made (AC1, after the start) in the task's journal: what a follow-up revises. */
export function addPlanEvent(task: FinishedTask): void {
  const file = path.join(task.runDir, 'events.jsonl');
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  const plan = {
    type: 'plan',
    plan: {
      title: 'Add slugify',
      acceptanceCriteria: [{ id: 'AC1', description: 'slugify works', type: 'functional', critical: true }],
    },
    usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 },
    at: new Date().toISOString(),
  };
  lines.splice(1, 0, JSON.stringify(plan));
  writeFileSync(file, `${lines.join('\n')}\n`);
}
