/**
 * The parent note of a project, `.agent-runner/task-<ID>.md`: the plan as a table (subtask, scope, blocked by,
 * state, link to its own note), the merge log, the combined check of the final head, the review verdicts and the total usage and
 * cost. Each subtask keeps its own note next to it. Titles, reasons, reviews, file names and commands come from
 * the planner, the reviewer and the workers: they pass the note's one escaping point (src/notes/markdown-text.ts).
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { WrittenNote } from '../core/events.js';
import type { DodOutcome } from '../core/types.js';
import { combinedStatus, failedCriteria } from './combined-check.js';
import type { CombinedCheck, ReviewVerdict } from './project-events.js';
import { checkDetailText } from '../core/test-counts.js';
import { totalTokens } from '../core/usage.js';
import { NOTE_LIMITS, boundDocument, codeSpan, cutList, inlineText } from '../notes/markdown-text.js';
import { noteDigest } from '../notes/note-digest.js';
import { redactValue } from '../notes/redact.js';
import { showControls } from '../notes/terminal-text.js';
import type { ProjectOutcome } from './project-outcome.js';

export interface ProjectNoteInput {
  taskId: string;
  title: string;
  prd: string;
  prdPath: string;
  repoRoot: string;
  branch: string;
  baseSha: string;
  worktreePath: string;
  max: number;
  startedAt: number;
  finishedAt: number;
  outcome: ProjectOutcome;
  redact?: (text: string) => string;
}

/** A name (id, path, branch, command) as a code span in a table cell. */
const code = (text: string) => codeSpan(text, NOTE_LIMITS.code, 'table');
/** Names as code spans in one table cell, at most `NOTE_LIMITS.listItems`, the cut said. */
const codes = (names: readonly string[]) => {
  const cut = cutList(names, NOTE_LIMITS.listItems, 'names');
  return [cut.items.map(code).join(', '), cut.notice].filter(Boolean).join(' ');
};

function dodLines(dod: DodOutcome): string[] {
  if (dod.results.length === 0) return [`Definition of Done: ${dod.status} (${inlineText(dod.source)})`];
  return [
    `Definition of Done: **${dod.status}** (${inlineText(dod.source)})`,
    '',
    '| check | command | result | exit | time |',
    '|---|---|---|---|---|',
    ...dod.results.map(
      (result) =>
        `| ${inlineText(result.name)} | ${code(result.command)} | ${result.status}${checkDetailText(undefined, result.tests)} | ${result.exitCode ?? '-'} | ${(result.durationMs / 1000).toFixed(1)} s |`,
    ),
  ];
}

/**
 * The combined check of the final head: which head and after what it ran, the DoD, and every merged
 * subtask's criteria checks on that tree.
 */
function checkLines(check: CombinedCheck | null): string[] {
  if (!check) return ['Not run: nothing merged stayed on the integration branch.'];
  const criteria = check.criteria ?? [];
  const failed = failedCriteria(check);
  return [
    `**${combinedStatus(check)}** on ${code(check.headSha.slice(0, 12))}, after ${inlineText(check.subtask)}${failed.length ? `: ${failed.map((result) => `${code(result.subtask)} ${inlineText(result.criterionId)}`).join(', ')} failed on the combined tree` : ''}`,
    ...(check.sandbox ? ['', `Ran in ${sandboxText(check.sandbox)}.`] : []),
    '',
    ...dodLines(check.dod),
    '',
    ...(criteria.length === 0
      ? ["The merged subtasks' criteria: none has a check agent-runner runs."]
      : [
          "The merged subtasks' criteria, checked again on this tree:",
          '',
          '| subtask | criterion | critical | check | result | exit | time |',
          '|---|---|---|---|---|---|---|',
          ...criteria.map(
            (result) =>
              `| ${code(result.subtask)} | ${inlineText(result.criterionId)} | ${result.critical ? 'yes' : 'no'} | ${code(result.target)} | ${result.status}${checkDetailText(undefined, result.tests)} | ${result.exitCode ?? '-'} | ${(result.durationMs / 1000).toFixed(1)} s |`,
          ),
        ]),
  ];
}

/** The plan table and one line per subtask saying how it ended. */
function planLines(outcome: ProjectOutcome): string[] {
  return [
    '| subtask | title | write scope | blocked by | state | attempts | note |',
    '|---|---|---|---|---|---|---|',
    ...outcome.subtasks.map((record) => {
      const note = `task-${record.taskId}.md`;
      return `| ${code(record.subtask.id)} | ${inlineText(record.subtask.title, NOTE_LIMITS.title)} | ${codes(record.subtask.writeScope)} | ${codes(record.subtask.blockedBy) || '-'} | ${record.state} | ${record.attempt} | [${inlineText(note)}](${encodeURI(note)}) |`;
    }),
    '',
    ...outcome.subtasks.map(
      (record) => `- ${code(record.subtask.id)}: ${inlineText(record.reason || record.state)}`,
    ),
  ];
}

/** One review's line and its findings. */
function reviewEntry(head: string, review: ReviewVerdict): string[] {
  return [
    `- ${head}: **${review.verdict}**: ${inlineText(review.summary)}`,
    ...review.findings.map(
      (finding) =>
        `  - ${finding.severity} ${code(`${finding.file}${finding.line ? `:${finding.line}` : ''}`)}: ${inlineText(finding.message)}`,
    ),
  ];
}

/** The review verdicts with their findings: each subtask's, then each fix-up's. */
function reviewLines(outcome: ProjectOutcome): string[] {
  const fixups = outcome.fixupReviews ?? [];
  if (!outcome.subtasks.some((record) => record.reviews.length > 0) && fixups.length === 0)
    return ['No subtask reached its review.'];
  return [
    ...outcome.subtasks.flatMap((record) =>
      record.reviews.flatMap((review, index) =>
        reviewEntry(`${code(record.subtask.id)} review ${index + 1}`, review),
      ),
    ),
    ...fixups.flatMap((entry) =>
      reviewEntry(`${code(entry.fixup)} (after merging ${code(entry.subtask)}) review`, entry.review),
    ),
  ];
}

/** Where a combined check ran, in words. */
function sandboxText(sandbox: NonNullable<CombinedCheck['sandbox']>): string {
  return sandbox.reused
    ? "the project's integration sandbox, brought to this head"
    : `a fresh sandbox (${inlineText(sandbox.reason ?? 'made for it')})`;
}

/** The merge log: each merge, its files on a conflict, the integration head and the combined DoD. */
function mergeLines(outcome: ProjectOutcome): string[] {
  if (outcome.merges.length === 0) return ['Nothing merged.'];
  return [
    '| # | subtask | branch | result | integration head | combined check |',
    '|---|---|---|---|---|---|',
    ...outcome.merges.map(
      (merge, index) =>
        `| ${index + 1} | ${code(merge.subtask)} | ${code(merge.branch)} | ${merge.status}${merge.files?.length ? ` (${codes(merge.files)})` : ''} | ${code(merge.sha.slice(0, 12))} | ${merge.check ? combinedStatus(merge.check) : '-'} |`,
    ),
  ];
}

/** The note's Markdown: every text from data escaped for its place (src/notes/markdown-text.ts). */
export function renderProjectNote(input: ProjectNoteInput): string {
  const { outcome } = input;
  const usage = outcome.usage.total;
  const name = (text: string) => codeSpan(text, NOTE_LIMITS.longLine);
  const lines = [
    `# ${inlineText(input.title, NOTE_LIMITS.title)}`,
    '',
    `- Task: ${name(input.taskId)} (split into ${outcome.subtasks.length} subtasks)`,
    `- State: **${outcome.state}**: ${inlineText(outcome.reason)}`,
    `- Integration branch: ${name(input.branch)} at ${name(outcome.headSha.slice(0, 12))} (base ${name(input.baseSha.slice(0, 12))}), worktree ${name(input.worktreePath)}`,
    `- PRD: ${name(path.relative(input.repoRoot, input.prdPath) || input.prdPath)}`,
    `- Parallel: at most ${input.max} subtasks at once; ${((input.finishedAt - input.startedAt) / 1000).toFixed(1)} s wall clock`,
    '',
    '## Plan',
    '',
    ...planLines(outcome),
    '',
    '## Reviews',
    '',
    ...reviewLines(outcome),
    '',
    '## Merge log',
    '',
    ...mergeLines(outcome),
    '',
    '## Combined check',
    '',
    ...checkLines(outcome.combined),
    '',
    '## Usage',
    '',
    `- Meta-agent: ${outcome.metaCalls} call(s), ${totalTokens(outcome.usage.meta)} tokens`,
    `- Workers: ${totalTokens(outcome.usage.worker)} tokens`,
    `- Total: ${totalTokens(usage)} tokens, $${usage.costUsd.toFixed(4)}`,
    '',
  ];
  return lines.join('\n');
}

/** Writes the note atomically next to the subtasks' notes; returns its path and digest (what memory checks). */
export async function writeProjectNote(input: ProjectNoteInput, stateDir: string): Promise<WrittenNote> {
  // Redacted before anything is escaped or cut (an escaped or halved secret would no longer match), and after.
  let text = renderProjectNote(input.redact ? redactValue(input, input.redact) : input);
  if (input.redact) text = input.redact(text);
  text = boundDocument(showControls(text), NOTE_LIMITS.note, '## Usage');
  await mkdir(stateDir, { recursive: true });
  const file = path.join(stateDir, `task-${input.taskId}.md`);
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, file);
  return { path: file, sha256: noteDigest(text) };
}
