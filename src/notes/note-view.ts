/**
 * The view the task note's template renders (templates/task-note.md.hbs, or `notes.template`). Every text in
 * it is already redacted, escaped for its place and bounded (src/notes/markdown-text.ts): a template places
 * values and never escapes one. Numbers, states and the runner's own words are the only values that arrive as
 * they are; the raw record never reaches the template.
 */
import { formatDuration } from '../config/units.js';
import { workOffBranch } from '../core/completion-gate.js';
import type { DetectedCommand } from '../core/detected-command.js';
import type { SetupCommandReport } from '../core/events.js';
import { refusalMessage } from '../core/refusal.js';
import { checkDetailText } from '../core/test-counts.js';
import type { TaskRecord } from '../core/task-runner.js';
import type { Baseline, CriterionEvidence, DodCheckResult, RunRecord, TaskFacts } from '../core/types.js';
import { comparisonText } from '../core/baseline.js';
import { diskCapsView } from './disk-caps-view.js';
import { followupView } from './followup-view.js';
import { setupView } from './setup-view.js';
import { totalTokens } from '../core/usage.js';
import {
  NOTE_LIMITS,
  codeSpan,
  cutList,
  fencedBlock,
  fencedLines,
  htmlText,
  inlineText,
  lastOfList,
  outputDetails,
  paragraphText,
} from './markdown-text.js';
import { decisionsOffered } from '../memory/memory-proposals.js';
import { redactValue } from './redact.js';
import { stripTerminalSequences } from './terminal-text.js';

export interface NoteContext {
  repository: string;
  prdPath: string;
  workerModel: string;
  /** The other workers the Meta-agent could choose, as `type (model)`, comma-separated. */
  otherWorkers?: string;
  /** Applied to every text that goes into the note (keys, configured secrets). */
  redact?: (text: string) => string;
  /** The `sandbox.setup` commands that ran (finished reports), in order. */
  setup?: readonly SetupCommandReport[];
  /** The set-up commands detected from the repository (sandbox.setup not set), with the file that decided each. */
  setupDetected?: readonly DetectedCommand[];
}

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

/** The icon of a status (`✅` for passed), or nothing. */
export function statusIcon(status: string): string {
  return STATUS_ICONS[status] ?? '';
}

/** A status with its icon: `✅ passed`. */
function withIcon(status: string): string {
  return `${statusIcon(status)} ${inlineText(status)}`;
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

/** Escaped one-line texts of a list, at most `max` of them, and the cut in words. */
function textList(
  items: readonly string[],
  unit: string,
  max: number = NOTE_LIMITS.listItems,
): { items: string[]; cut: string } {
  const cut = cutList(items, max, unit);
  return { items: cut.items.map((item) => inlineText(item)), cut: cut.notice };
}

/** Code spans of a list of names (paths, commands), at most `NOTE_LIMITS.listItems`, and the cut in words. */
function codeList(items: readonly string[], unit: string): { items: string[]; cut: string } {
  const cut = cutList(items, NOTE_LIMITS.listItems, unit);
  return { items: cut.items.map((item) => codeSpan(item)), cut: cut.notice };
}

/** One row of the acceptance criteria table. */
function criterionRow(criterion: CriterionEvidence) {
  const check = criterion.check;
  const result = criterion.checkResult;
  const target =
    result?.target ?? check?.command ?? [check?.file, check?.test_name].filter(Boolean).join(' ');
  const checkStatus = result?.status ?? (check ? 'not run' : '');
  return {
    id: inlineText(criterion.id),
    description: inlineText(criterion.description),
    type: inlineText(criterion.type),
    critical: criterion.critical,
    check: check ? codeSpan(`${check.kind}: ${target}`, NOTE_LIMITS.code, 'table') : '—',
    checkOutcome: checkStatus
      ? `${withIcon(checkStatus)}${result ? checkDetailText(result.exitCode, result.tests) : ''}`
      : '—',
    assessment: withIcon(criterion.status),
    comment: inlineText(criterion.comment),
  };
}

/** The acceptance criteria table and the details of the checks that did not pass. */
function criteriaView(criteria: readonly CriterionEvidence[]) {
  const rows = cutList(criteria, NOTE_LIMITS.listItems, 'criteria');
  const failing = cutList(
    criteria.flatMap(({ id, checkResult }) =>
      checkResult && checkResult.status !== 'passed' ? [{ id, result: checkResult }] : [],
    ),
    NOTE_LIMITS.outputTails,
    'failing checks',
  );
  return {
    criteria: rows.items.map(criterionRow),
    criteriaCut: rows.notice,
    checkDetails: failing.items.map(({ id, result }) => {
      const exit = result.exitCode === null ? '' : `, exit ${result.exitCode}`;
      const reason = result.reason ? ` (${htmlText(result.reason)})` : '';
      return outputDetails(
        `${htmlText(id)} check \`${htmlText(result.target)}\`: ${result.status}${exit}${reason}`,
        result.outputTail,
      );
    }),
    checkDetailsCut: failing.notice,
  };
}

/** The evidence the latest facts hold: commits, diff stat, uncommitted paths, scope violations, problems. */
function factsView(facts: TaskFacts | undefined) {
  const commits = cutList(facts?.commits ?? [], NOTE_LIMITS.listItems, 'commits');
  const uncommitted = codeList(facts?.uncommitted ?? [], 'paths');
  const violations = codeList(facts?.scopeViolations ?? [], 'paths');
  const problems = textList(facts?.problems ?? [], 'problems');
  return {
    commits: commits.items.map((commit) => ({
      sha: codeSpan(commit.sha.slice(0, 10)),
      subject: inlineText(commit.subject, NOTE_LIMITS.code),
    })),
    commitsCut: commits.notice,
    diffStat: facts?.diffStat.trim() ? fencedLines(facts.diffStat.trimEnd(), NOTE_LIMITS.diffStatLines) : '',
    dirty: facts?.dirty ?? false,
    uncommitted: uncommitted.items,
    uncommittedCut: uncommitted.cut,
    scopeViolations: violations.items,
    scopeViolationsCut: violations.cut,
    factProblems: problems.items,
    factProblemsCut: problems.cut,
  };
}

/** How a check compares with the base, for the table's "On the base" column ("not run" without a baseline). */
function baseCell(result: DodCheckResult): string {
  if (!result.base) return '–';
  const before = `${result.base.status}${checkDetailText(result.base.exitCode || null, result.base.tests)}`;
  return `${before}: ${comparisonText(result)}`;
}

/** The baseline paragraph: where it ran, which checks were red before any change, and their failing tests. */
function baselineView(baseline: Baseline | null | undefined) {
  if (!baseline || baseline.dod.results.length === 0) return { baseline: null };
  const red = baseline.dod.results.filter(
    (result) => result.status === 'failed' || result.status === 'timeout',
  );
  return {
    baseline: {
      baseSha: codeSpan(baseline.baseSha.slice(0, 12), NOTE_LIMITS.code),
      dirty: baseline.dod.ranOnDirtyTree,
      allGreen: red.length === 0,
      red: cutList(red, NOTE_LIMITS.listItems, 'checks').items.map((result) => ({
        name: inlineText(result.name),
        result: `${withIcon(result.status)}${checkDetailText(result.exitCode || null, result.tests)}`,
        failingTests: (result.failingTests ?? [])
          .slice(0, 10)
          .map((name) => codeSpan(name, NOTE_LIMITS.code)),
        moreFailing: Math.max(0, (result.failingTests?.length ?? 0) - 10),
      })),
    },
  };
}

/** The Definition of Done of the latest run: its checks and the output of those that did not pass. */
function dodView(runs: readonly RunRecord[]) {
  const dod = [...runs].reverse().find((run) => run.dod)?.dod;
  const results = cutList(dod?.results ?? [], NOTE_LIMITS.listItems, 'checks');
  const failures = cutList(
    (dod?.results ?? []).filter((result) => result.status !== 'passed' && result.outputTail),
    NOTE_LIMITS.outputTails,
    'failing checks',
  );
  return {
    dodSource: inlineText(dod?.source ?? 'not run'),
    dod: results.items.map((result: DodCheckResult) => ({
      name: inlineText(result.name),
      command: codeSpan(result.command, NOTE_LIMITS.code, 'table'),
      // Exit 0 goes without saying for a DoD check; its test counts are shown passing or failing.
      result: `${withIcon(result.status)}${checkDetailText(result.exitCode || null, result.tests)}${
        result.rewrote ? `; changed ${result.rewrote.count} tracked file(s), put back` : ''
      }`,
      duration: formatDuration(result.durationMs),
      onBase: inlineText(baseCell(result)),
    })),
    dodCut: results.notice,
    dodFailures: failures.items.map((result) => outputDetails(htmlText(result.name), result.outputTail)),
    dodFailuresCut: failures.notice,
    dodNote: dod?.status === 'none' ? 'No checks configured or detected.' : 'The checks did not run.',
  };
}

/** One run of the timeline: the decision, the worker's summary and commands, errors, assessment, refusals. */
function runView(run: RunRecord) {
  const commands = cutList(run.commands, NOTE_LIMITS.runCommands, 'commands');
  const errors = textList(run.errors, 'errors', NOTE_LIMITS.runReasons);
  const refusals = textList(run.refusals, 'reasons', NOTE_LIMITS.runReasons);
  return {
    index: run.index,
    mode: run.mode,
    worker: run.workerType ? inlineText(run.workerType) : '',
    model: run.model ? inlineText(run.model) : '',
    usage: `${totalTokens(run.usage)} tokens${run.usage.costUsd > 0 ? `, $${run.usage.costUsd.toFixed(4)}` : ''}`,
    duration: formatDuration(run.durationMs),
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    reason: inlineText(run.decision.reason),
    patterns: inlineText(run.decision.usedPatterns.join(', ')),
    finalMessage: run.finalMessage ? fencedBlock(run.finalMessage) : '',
    commands: commands.items.map((command) => ({
      command: codeSpan(command.command, NOTE_LIMITS.code, 'table'),
      exitCode: command.exitCode,
      status: inlineText(command.status, NOTE_LIMITS.label),
    })),
    commandsCut: commands.notice,
    errors: errors.items,
    errorsCut: errors.cut,
    assessment: run.assessment ? inlineText(run.assessment.summary) : '',
    refusals: refusals.items,
    refusalsCut: refusals.cut,
  };
}

/** The check the task stopped on: which, its command, exit code and counts, its error line and the fix. */
function rootCauseView(cause: TaskRecord['rootCause']) {
  if (!cause) return null;
  const how = cause.status === 'timeout' ? 'timed out' : 'failed';
  const error = cause.errorLine ? `: ${inlineText(cause.errorLine, NOTE_LIMITS.longLine)}` : '';
  return {
    line: `${inlineText(cause.check)} (${codeSpan(cause.command, NOTE_LIMITS.code, 'table')}) ${how}${checkDetailText(cause.exitCode, cause.tests)}${error}`,
    hint: cause.hint ? inlineText(cause.hint, NOTE_LIMITS.longLine) : '',
  };
}

/** The error a task ended on: its code, its message's first line, and the rest of it as a block. */
function errorView(error: TaskRecord['error']) {
  if (!error) return null;
  const [first = '', ...rest] = error.message.split('\n');
  const detail = rest.join('\n').trim();
  return {
    code: codeSpan(error.code),
    message: inlineText(first, NOTE_LIMITS.longLine),
    // The rest of an error is a failed command's output (set-up): shown without its colour sequences.
    detail: detail ? fencedBlock(stripTerminalSequences(detail)) : '',
  };
}

/**
 * Where the work is when the task branch does not hold the worker's head (the pending ref, why, how to look at
 * it), in the gate's own words; null when it does, or for facts recorded before the branch was observed.
 */
function offBranchView(facts: TaskFacts | undefined, baseSha: string) {
  const off = facts ? workOffBranch(facts) : null;
  if (!off?.branch) return null;
  const code = (text: string) => codeSpan(text, NOTE_LIMITS.longLine);
  return {
    words: inlineText(refusalMessage(off), NOTE_LIMITS.longLine),
    pendingRef: off.pendingRef ? code(off.pendingRef) : '',
    pendingLog: off.pendingRef ? code(`git log ${off.pendingRef}`) : '',
    pendingDiff: off.pendingRef ? code(`git diff ${baseSha} ${off.pendingRef}`) : '',
    branchHead: code(off.branch.headSha),
  };
}

/** Where the work is and how to go on: the runner's own commands, built from the task's names. */
function pickUpView(record: TaskRecord, context: NoteContext, branch: string, worktreePath: string) {
  const code = (text: string) => codeSpan(text, NOTE_LIMITS.longLine);
  return {
    openCommand: code(`cd ${worktreePath}`),
    logCommand: code(`git log ${branch}`),
    resumeCommand: code(`agent-runner resume ${record.taskId}`),
    rerunCommand: code(`agent-runner run --prd ${context.prdPath} --task-id ${record.taskId}`),
    eventsPath: code(`${record.runDir}/events.jsonl`),
    preservedShow: record.preservedRef ? code(`git show ${record.preservedRef}`) : '',
  };
}

/**
 * The decisions a COMPLETE task offers the memory bank: model text, so the title is a code span and the text a
 * fenced block (no markup, link or mention of theirs renders); a person accepts or rejects them.
 */
function proposedDecisionsView(record: TaskRecord) {
  return {
    proposedDecisions: decisionsOffered(record).map((decision) => ({
      title: codeSpan(decision.title, NOTE_LIMITS.longLine),
      text: fencedBlock(decision.text),
    })),
    proposalsCommand: codeSpan('agent-runner memory proposals'),
  };
}

/** The view the template renders: every text redacted, escaped for its place and bounded. */
export function noteView(source: TaskRecord, context: NoteContext): Record<string, unknown> {
  // Redacted before anything is escaped or cut: an escaped or halved secret would no longer match.
  const record = context.redact ? redactValue(source, context.redact) : source;
  const code = (text: string) => codeSpan(text, NOTE_LIMITS.longLine);
  const branch = record.task?.branch ?? `agent-runner/${record.taskId}`;
  const worktreePath = record.task?.worktreePath ?? '(not created)';
  const lastFacts = [...record.runs].reverse().find((run) => run.facts)?.facts;
  const retrospective = textList(
    [...record.runs].reverse().find((run) => run.assessment)?.assessment?.retrospective ?? [],
    'items',
  );
  const basis = textList(record.basis, 'items');
  const runs = lastOfList(record.runs, NOTE_LIMITS.runs, 'runs');
  const usd = record.usage.total.costUsd;
  return {
    taskId: inlineText(record.taskId),
    title: inlineText(record.plan?.title ?? record.taskId, NOTE_LIMITS.title),
    state: record.state,
    // An error's further lines (a failed set-up command's output) are in the Error section, not the State row.
    reason: inlineText(record.error ? (record.reason.split('\n')[0] ?? '') : record.reason),
    rootCause: rootCauseView(record.rootCause),
    repository: code(context.repository),
    branch: code(branch),
    baseSha: code(record.task?.baseSha ?? '(not prepared)'),
    headSha: code(lastFacts?.headSha ?? record.task?.baseSha ?? '(none)'),
    offBranch: offBranchView(lastFacts, record.task?.baseSha ?? ''),
    worktreePath: code(worktreePath),
    dirtyStart: record.task?.dirtyStart ?? false,
    workerType: inlineText(record.workerType),
    workerModel: inlineText(context.workerModel),
    otherWorkers: context.otherWorkers ? inlineText(context.otherWorkers) : '',
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
    runDir: code(record.runDir),
    ...diskCapsView(record.diskCaps),
    sandboxRuntime: record.sandboxRuntime
      ? inlineText(`${record.sandboxRuntime.runtime} (${record.sandboxRuntime.reason})`, NOTE_LIMITS.longLine)
      : '',
    question: record.question ? inlineText(record.question, NOTE_LIMITS.longLine) : '',
    error: errorView(record.error),
    preservedRef: record.preservedRef ? code(record.preservedRef) : '',
    prdSummary: paragraphText(summarizePrd(record.prd)),
    basis: basis.items,
    basisCut: basis.cut,
    ...criteriaView(record.criteria),
    ...factsView(lastFacts),
    ...dodView(record.runs),
    ...baselineView(record.baseline),
    runs: runs.items.map(runView),
    runsCut: runs.notice,
    retrospective: retrospective.items,
    retrospectiveCut: retrospective.cut,
    ...proposedDecisionsView(record),
    ...setupView(context.setup ?? [], context.setupDetected ?? []),
    ...followupView(record, lastFacts, criterionRow),
    ...pickUpView(record, context, branch, worktreePath),
  };
}
