/**
 * Writes the task note `.agent-runner/task-<ID>.md` from the task record, with a Handlebars template
 * (`templates/task-note.md.hbs`, or `notes.template` from the config). Renders well on GitHub.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import Handlebars from 'handlebars';
import { formatDuration } from '../config/units.js';
import { workOffBranch } from '../core/completion-gate.js';
import type { SetupCommandReport } from '../core/events.js';
import { refusalMessage } from '../core/refusal.js';
import type { TaskRecord } from '../core/task-runner.js';
import type { TaskFacts } from '../core/types.js';
import { totalTokens } from '../core/usage.js';
import { PACKAGE_ROOT } from '../version.js';

export const DEFAULT_NOTE_TEMPLATE = path.join(PACKAGE_ROOT, 'templates', 'task-note.md.hbs');

const STATUS_ICONS: Record<string, string> = {
  passed: '✅',
  failed: '❌',
  timeout: '⏱️',
  unknown: '❔',
  skipped: '⏭️',
  'not assessed': '❔',
  not_executable: '🚫',
  not_executed: '➖',
  'not run': '➖',
};

function createHandlebars(): typeof Handlebars {
  const instance = Handlebars.create();
  // Table cells: one line, no pipes breaking the table.
  instance.registerHelper('cell', (value: unknown) =>
    String(value ?? '')
      .replace(/\r?\n+/g, ' ')
      .replace(/\|/g, '\\|')
      .slice(0, 300),
  );
  instance.registerHelper('clip', (value: unknown, max: unknown) => {
    const text = String(value ?? '')
      .replace(/\s+/g, ' ')
      .replace(/\|/g, '\\|');
    const limit = typeof max === 'number' ? max : 120;
    return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
  });
  instance.registerHelper('eq', (left: unknown, right: unknown) => left === right);
  instance.registerHelper('short', (value: unknown) => String(value ?? '').slice(0, 10));
  instance.registerHelper('statusIcon', (value: unknown) => STATUS_ICONS[String(value)] ?? '');
  return instance;
}

export interface NoteContext {
  repository: string;
  prdPath: string;
  workerModel: string;
  /** Applied to every text that goes into the note (keys, configured secrets). */
  redact?: (text: string) => string;
  /** The `sandbox.setup` commands that ran (finished reports), in order. */
  setup?: readonly SetupCommandReport[];
}

/** The first paragraph of the PRD, bounded. */
export function summarizePrd(prd: string, maxChars = 600): string {
  const body = prd
    .split(/\r?\n/)
    .filter((line) => !/^#/.test(line.trim()))
    .join('\n')
    .trim();
  const paragraph = body.split(/\n\s*\n/)[0] ?? '';
  return paragraph.length > maxChars ? `${paragraph.slice(0, maxChars)}…` : paragraph || '(empty)';
}

/**
 * Where the work is when the task branch does not hold the worker's head (the pending ref, why, how to look at
 * it), in the gate's own words; null when it does, or for facts recorded before the branch was observed.
 */
function offBranchView(facts: TaskFacts | undefined) {
  const off = facts ? workOffBranch(facts) : null;
  if (!off?.branch) return null;
  return { words: refusalMessage(off), pendingRef: off.pendingRef, branchHead: off.branch.headSha };
}

/** The view the template renders. */
export function noteView(record: TaskRecord, context: NoteContext): Record<string, unknown> {
  const lastAssessment = [...record.runs].reverse().find((run) => run.assessment)?.assessment;
  const lastFacts = [...record.runs].reverse().find((run) => run.facts)?.facts;
  const lastDod = [...record.runs].reverse().find((run) => run.dod)?.dod;
  const criteria = record.criteria.map((criterion) => ({
    ...criterion,
    checkLabel: criterion.check
      ? `${criterion.check.kind}: ${criterion.checkResult?.target ?? criterion.check.command ?? [criterion.check.file, criterion.check.test_name].filter(Boolean).join(' ')}`
      : '',
    checkStatus: criterion.checkResult?.status ?? (criterion.check ? 'not run' : ''),
    checkExit: criterion.checkResult?.exitCode ?? null,
  }));
  const checkDetails = record.criteria
    .filter((criterion) => criterion.checkResult && criterion.checkResult.status !== 'passed')
    .map((criterion) => ({ id: criterion.id, ...criterion.checkResult }));
  const usd = record.usage.total.costUsd;
  return {
    taskId: record.taskId,
    title: record.plan?.title ?? record.taskId,
    state: record.state,
    reason: record.reason,
    repository: context.repository,
    branch: record.task?.branch ?? `agent-runner/${record.taskId}`,
    baseSha: record.task?.baseSha ?? '(not prepared)',
    headSha: lastFacts?.headSha ?? record.task?.baseSha ?? '(none)',
    offBranch: offBranchView(lastFacts),
    worktreePath: record.task?.worktreePath ?? '(not created)',
    dirtyStart: record.task?.dirtyStart ?? false,
    workerType: record.workerType,
    workerModel: context.workerModel,
    runCount: record.runs.length,
    metaCalls: record.metaCalls,
    tokens: {
      total: totalTokens(record.usage.total),
      meta: totalTokens(record.usage.meta),
      worker: totalTokens(record.usage.worker),
    },
    cost: usd > 0 ? `$${usd.toFixed(4)}` : 'not priced (add the models to `prices` in agent-runner.yaml)',
    duration: formatDuration(record.finishedAt - record.startedAt),
    startedAt: new Date(record.startedAt).toISOString(),
    finishedAt: new Date(record.finishedAt).toISOString(),
    runDir: record.runDir,
    question: record.question,
    error: record.error,
    preservedRef: record.preservedRef,
    prdPath: context.prdPath,
    prdSummary: summarizePrd(record.prd),
    criteria,
    checkDetails,
    basis: record.basis,
    commits: lastFacts?.commits ?? [],
    diffStat: (lastFacts?.diffStat ?? '').trimEnd(),
    dirty: lastFacts?.dirty ?? false,
    uncommitted: lastFacts?.uncommitted ?? [],
    scopeViolations: lastFacts?.scopeViolations ?? [],
    factProblems: lastFacts?.problems ?? [],
    dodSource: lastDod?.source ?? 'not run',
    dod: (lastDod?.results ?? []).map((result) => ({
      ...result,
      duration: formatDuration(result.durationMs),
    })),
    dodFailures: (lastDod?.results ?? []).filter((result) => result.status !== 'passed' && result.outputTail),
    dodNote: lastDod?.status === 'none' ? 'No checks configured or detected.' : 'The checks did not run.',
    runs: record.runs.map((run) => ({
      ...run,
      duration: formatDuration(run.durationMs),
      patterns: run.decision.usedPatterns.join(', '),
    })),
    retrospective: lastAssessment?.retrospective ?? [],
    setup: (context.setup ?? []).map((report) => ({
      ...report,
      duration: formatDuration(report.durationMs ?? 0),
      result: report.timedOut ? 'timed out' : report.exitCode === 0 ? 'passed' : 'failed',
    })),
    setupFailures: (context.setup ?? []).filter((report) => report.exitCode !== 0 && report.outputTail),
  };
}

/** Renders and writes the note atomically; returns its path. */
export async function writeTaskNote(
  record: TaskRecord,
  options: NoteContext & { agentRunnerDir: string; templatePath?: string },
): Promise<string> {
  const template = await readFile(options.templatePath ?? DEFAULT_NOTE_TEMPLATE, 'utf8');
  const render = createHandlebars().compile(template, { noEscape: true });
  let text = render(noteView(record, options)).replace(/\n{3,}/g, '\n\n');
  if (options.redact) text = options.redact(text);
  await mkdir(options.agentRunnerDir, { recursive: true });
  const file = path.join(options.agentRunnerDir, `task-${record.taskId}.md`);
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, file);
  return file;
}
