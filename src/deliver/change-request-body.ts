/**
 * The pull/merge request's title and body: the evidence, built from the same records the note is built from
 * (the task's summary with its criteria, the runs with their facts, DoD and usage, the baseline). Every text
 * a worker or a model could shape is escaped for its place and bounded (src/notes/markdown-text.ts), the whole
 * is redacted, and the body stays under GitHub's limit: the longest sections are cut first, and say so.
 */
import { comparisonText } from '../core/baseline.js';
import { describePlanChanges } from '../core/followup.js';
import { checkDetailText } from '../core/test-counts.js';
import type { Baseline, RunRecord, TaskSummary, Usage } from '../core/types.js';
import { totalTokens } from '../core/usage.js';
import { formatDuration } from '../config/units.js';
import {
  NOTE_LIMITS,
  boundDocument,
  codeSpan,
  cutList,
  fencedBlock,
  fencedLines,
  inlineText as markdownInline,
} from '../notes/markdown-text.js';
import { inertForForge } from './forge-text.js';
import { statusIcon } from '../notes/note-view.js';
import type { Redactor } from '../notes/redact.js';

/** Data as one line of escaped prose the forge reads no mention, reference or autolink in. */
export function inlineText(text: string, max?: number): string {
  return markdownInline(inertForForge(text), max);
}

/** Data as a code span: a forge links nothing inside one (the note's span, broken Unicode made whole). */
export { codeSpan };

/**
 * Every text of the records redacted before it is made inert: the word joiners that break a mention or a
 * reference would also break a secret apart, where the redaction of the whole body could no longer find it.
 */
export function redactedRecords<T>(records: T, redact: Redactor): T {
  return JSON.parse(JSON.stringify(records), (_key, value: unknown) =>
    typeof value === 'string' ? redact(value) : value,
  ) as T;
}

/** GitHub refuses a pull request body longer than this (GitLab's limit is higher). */
export const BODY_LIMIT = 65_536;
/** Room kept below the limit for the notice of a cut and the closers of what it cut. */
const BODY_MARGIN = 1_024;

/** What the body is built from: the records of a finished task. */
export interface ChangeRequestEvidence {
  summary: TaskSummary;
  runs: readonly RunRecord[];
  baseline: Baseline | null;
}

/** The request's title: the PRD's (plan's) title, one line, bounded. */
export function changeRequestTitle(summary: TaskSummary, redact: Redactor): string {
  const title = inertForForge(redact(summary.title)).replace(/\s+/g, ' ').trim() || summary.taskId;
  return title.length > 250 ? `${title.slice(0, 249)}…` : title;
}

function money(value: number): string {
  return `$${value.toFixed(4)}`;
}

function usageText(usage: Usage): string {
  return `${totalTokens(usage).toLocaleString('en-US')} tokens, ${money(usage.costUsd)}`;
}

function headerSection(summary: TaskSummary): string {
  return [
    `**State: ${summary.state}** — ${inlineText(summary.reason)}`,
    '',
    `| | |`,
    `|---|---|`,
    `| Task | ${codeSpan(summary.taskId, NOTE_LIMITS.code, 'table')} |`,
    `| Branch | ${codeSpan(summary.branch, NOTE_LIMITS.code, 'table')} at ${codeSpan(summary.headSha ?? 'unknown', 40, 'table')} |`,
    `| Worker runs | ${summary.runs} |`,
    `| Duration | ${formatDuration(summary.durationMs)} |`,
    `| Cost | ${usageText(summary.usage.total)} |`,
    '',
    'Written by agent-runner from what it observed itself (git, the checks it ran), not from what the worker said.',
  ].join('\n');
}

export function criteriaSection(summary: TaskSummary): string {
  const lines = ['## Acceptance criteria', ''];
  if (summary.criteria.length === 0) return [...lines, 'No criteria were planned.'].join('\n');
  lines.push('| | Criterion | Check | Result | Assessment |', '|---|---|---|---|---|');
  const shown = cutList(summary.criteria, NOTE_LIMITS.listItems, 'criteria');
  for (const criterion of shown.items) {
    const result = criterion.checkResult;
    const check = result
      ? `${inlineText(result.kind, NOTE_LIMITS.label)} ${codeSpan(result.target, NOTE_LIMITS.code, 'table')}`
      : criterion.check
        ? inlineText(criterion.check.kind, NOTE_LIMITS.label)
        : '—';
    const outcome = result
      ? `${statusIcon(result.status)} ${result.status}${checkDetailText(result.exitCode, result.tests)}`
      : 'not run';
    lines.push(
      `| ${codeSpan(criterion.id, NOTE_LIMITS.label, 'table')}${criterion.critical ? ' (critical)' : ''} | ` +
        `${inlineText(criterion.description)} | ${check} | ${outcome} | ` +
        `${statusIcon(criterion.status)} ${criterion.status}${criterion.comment ? `: ${inlineText(criterion.comment)}` : ''} |`,
    );
  }
  if (shown.notice) lines.push('', shown.notice);
  return lines.join('\n');
}

function dodSection(runs: readonly RunRecord[], baseline: Baseline | null): string {
  const lines = ['## Definition of Done', ''];
  const dod = [...runs].reverse().find((run) => run.dod)?.dod;
  if (!dod) return [...lines, 'No DoD check ran.'].join('\n');
  lines.push(
    `**${dod.status}** (checks from ${inlineText(dod.source, NOTE_LIMITS.label)}${dod.ranOnDirtyTree ? '; ran on uncommitted changes' : ''})` +
      (baseline
        ? `; baseline on ${codeSpan(baseline.baseSha.slice(0, 12))}: **${baseline.dod.status}**`
        : ''),
    '',
  );
  if (dod.results.length === 0) return lines.join('\n');
  lines.push('| Check | Command | Result | On the base |', '|---|---|---|---|');
  for (const result of cutList(dod.results, NOTE_LIMITS.listItems, 'checks').items) {
    lines.push(
      `| ${inlineText(result.name, NOTE_LIMITS.label)} | ${codeSpan(result.command, NOTE_LIMITS.code, 'table')} | ` +
        `${statusIcon(result.status)} ${result.status}${checkDetailText(result.exitCode, result.tests)} | ` +
        `${result.base ? inlineText(comparisonText(result)) : baseline ? 'not run on the base' : '—'} |`,
    );
  }
  return lines.join('\n');
}

function commitsSection(runs: readonly RunRecord[]): string {
  const lines = ['## Commits and diff stat', ''];
  const facts = [...runs].reverse().find((run) => run.facts)?.facts;
  if (!facts) return [...lines, 'No commit was observed.'].join('\n');
  lines.push(`From ${codeSpan(facts.baseSha.slice(0, 12))} to ${codeSpan(facts.headSha.slice(0, 12))}:`, '');
  const commits = cutList(facts.commits, NOTE_LIMITS.listItems, 'commits');
  for (const commit of commits.items)
    lines.push(`- ${codeSpan(commit.sha.slice(0, 12))} ${inlineText(commit.subject, NOTE_LIMITS.code)}`);
  if (commits.notice) lines.push(`- ${commits.notice}`);
  if (facts.diffStat.trim()) lines.push('', fencedLines(facts.diffStat, NOTE_LIMITS.diffStatLines));
  return lines.join('\n');
}

function runsSection(summary: TaskSummary, runs: readonly RunRecord[]): string {
  const lines = ['## Worker runs', ''];
  if (runs.length === 0) lines.push('No worker ran.');
  else {
    lines.push('| Run | Worker | Model | Mode | Exit | Duration | Usage |', '|---|---|---|---|---|---|---|');
    for (const run of cutList(runs, NOTE_LIMITS.listItems, 'runs').items) {
      lines.push(
        `| ${run.index} | ${inlineText(run.workerType ?? 'codex', NOTE_LIMITS.label)} | ` +
          `${run.model ? codeSpan(run.model, NOTE_LIMITS.label, 'table') : '—'} | ${run.mode} | ` +
          `${run.exitCode}${run.timedOut ? ' (timed out)' : ''} | ${formatDuration(run.durationMs)} | ${usageText(run.usage)} |`,
      );
    }
  }
  const { meta, worker, total } = summary.usage;
  lines.push(
    '',
    `Usage: Meta-agent ${usageText(meta)} in ${summary.metaCalls} calls; worker ${usageText(worker)}; ` +
      `total ${usageText(total)}.`,
  );
  return lines.join('\n');
}

function verifySection(summary: TaskSummary): string {
  return [
    '## How to verify',
    '',
    'Run the recorded DoD and criteria checks again on this branch, in a fresh sandbox:',
    '',
    '```sh',
    `agent-runner verify ${summary.branch}`,
    '```',
    '',
    `The full note is \`.agent-runner/task-${summary.taskId}.md\` in the repository agent-runner ran in.`,
  ].join('\n');
}

/**
 * The body: state, criteria, DoD with the baseline, commits and diff stat, worker runs and usage, how to verify.
 * `extra` sections (a project's subtasks) go before "How to verify". At most {@link BODY_LIMIT} characters.
 */
export function changeRequestBody(
  evidence: ChangeRequestEvidence,
  redact: Redactor,
  extra: readonly string[] = [],
  /** The issue the request closes (`deliver.closes`): a number, so the line is ours, never forge text. */
  closes?: number,
): string {
  const { summary, runs, baseline } = redactedRecords(evidence, redact);
  const sections = [
    headerSection(summary),
    followupSection(summary),
    criteriaSection(summary),
    dodSection(runs, baseline),
    commitsSection(runs),
    runsSection(summary, runs),
    ...extra,
    verifySection(summary),
    closes !== undefined ? `Closes #${Math.trunc(closes)}` : '',
  ]
    .filter(Boolean)
    .map(redact);
  return boundSections(sections, BODY_LIMIT - BODY_MARGIN).join('\n\n') + '\n';
}

/**
 * The follow-up the latest attempt was (`agent-runner followup`): the person's instruction in a fence (nothing
 * in it is read as markup), how the plan was revised, what the task spent before it. Empty for a first run.
 */
function followupSection(summary: TaskSummary): string {
  const followup = summary.followup;
  if (!followup) return '';
  const earlier = followup.earlier;
  return [
    `## Follow-up ${followup.number}`,
    '',
    'The instruction:',
    '',
    fencedBlock(followup.instruction),
    '',
    ...(followup.changes ? describePlanChanges(followup.changes).map((line) => `- ${inlineText(line)}`) : []),
    '',
    `Every criterion was checked again on the new head. Before this follow-up: ${earlier.runs} worker runs, ` +
      `${earlier.metaCalls} Meta-agent calls, ${usageText(earlier.usage.total)}; the figures above are the follow-up's.`,
  ].join('\n');
}

/**
 * One subtask of a project, for the project's request: its state and reason, its criteria and its DoD, one
 * heading level down. `evidence` is null for a subtask that never ran.
 */
export function subtaskSection(
  id: string,
  state: string,
  evidence: ChangeRequestEvidence | null,
  redact: Redactor,
): string {
  const heading = `## Subtask ${codeSpan(redact(id), NOTE_LIMITS.code)}: ${inlineText(redact(state))}`;
  if (!evidence) return [heading, '', 'It never ran.'].join('\n');
  const { summary, runs, baseline } = redactedRecords(evidence, redact);
  const nested = (section: string) => section.replace(/^## /gm, '### ');
  return [
    heading,
    '',
    `${inlineText(summary.title)} — ${inlineText(summary.reason)} (branch ${codeSpan(summary.branch, NOTE_LIMITS.code)})`,
    '',
    nested(criteriaSection(summary)),
    '',
    nested(dodSection(runs, baseline)),
  ].join('\n');
}

/** Cuts the longest section (at a line end, closing what the cut left open, saying so) until all fit. */
function boundSections(sections: string[], max: number): string[] {
  const out = [...sections];
  const length = () => out.reduce((sum, section) => sum + section.length + 2, 0);
  for (let round = 0; round < out.length && length() > max; round += 1) {
    let longest = 0;
    out.forEach((section, index) => {
      if (section.length > (out[longest] as string).length) longest = index;
    });
    const room = Math.max(200, (out[longest] as string).length - (length() - max));
    out[longest] = boundDocument(out[longest] as string, room, '\0');
  }
  return out;
}
