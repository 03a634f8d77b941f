/**
 * The parent note of a project, `.agent-runner/task-<ID>.md`: the plan as a table (subtask, scope, blocked by,
 * state, link to its own note), the merge log, the combined DoD, the review verdicts and the total usage and
 * cost. Each subtask keeps its own note next to it.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { WrittenNote } from '../core/events.js';
import type { DodOutcome } from '../core/types.js';
import { totalTokens } from '../core/usage.js';
import { noteDigest } from '../notes/note-digest.js';
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

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (text: string) => `\`${text.replace(/`/g, "'")}\``;

function dodLines(dod: DodOutcome | null | undefined): string[] {
  if (!dod) return ['Not run.'];
  if (dod.results.length === 0) return [`${dod.status} (${dod.source})`];
  return [
    `**${dod.status}** (${dod.source})`,
    '',
    '| check | command | result | exit | time |',
    '|---|---|---|---|---|',
    ...dod.results.map(
      (result) =>
        `| ${cell(result.name)} | ${code(result.command)} | ${result.status} | ${result.exitCode ?? '-'} | ${(result.durationMs / 1000).toFixed(1)} s |`,
    ),
  ];
}

/** The note's Markdown. */
export function renderProjectNote(input: ProjectNoteInput): string {
  const { outcome } = input;
  const usage = outcome.usage.total;
  const lines = [
    `# ${input.title}`,
    '',
    `- Task: ${code(input.taskId)} (split into ${outcome.subtasks.length} subtasks)`,
    `- State: **${outcome.state}**: ${outcome.reason}`,
    `- Integration branch: ${code(input.branch)} at ${code(outcome.headSha.slice(0, 12))} (base ${code(input.baseSha.slice(0, 12))}), worktree ${code(input.worktreePath)}`,
    `- PRD: ${code(path.relative(input.repoRoot, input.prdPath) || input.prdPath)}`,
    `- Parallel: at most ${input.max} subtasks at once; ${((input.finishedAt - input.startedAt) / 1000).toFixed(1)} s wall clock`,
    '',
    '## Plan',
    '',
    '| subtask | title | write scope | blocked by | state | attempts | note |',
    '|---|---|---|---|---|---|---|',
    ...outcome.subtasks.map((record) => {
      const note = `task-${record.taskId}.md`;
      return `| ${code(record.subtask.id)} | ${cell(record.subtask.title)} | ${record.subtask.writeScope.map(code).join(', ')} | ${record.subtask.blockedBy.map(code).join(', ') || '-'} | ${record.state} | ${record.attempt} | [${note}](${note}) |`;
    }),
    '',
    ...outcome.subtasks.flatMap((record) => [
      `- ${code(record.subtask.id)}: ${cell(record.reason || record.state)}`,
    ]),
    '',
    '## Reviews',
    '',
    ...(outcome.subtasks.some((record) => record.reviews.length > 0)
      ? outcome.subtasks.flatMap((record) =>
          record.reviews.flatMap((review, index) => [
            `- ${code(record.subtask.id)} review ${index + 1}: **${review.verdict}**: ${cell(review.summary)}`,
            ...review.findings.map(
              (finding) =>
                `  - ${finding.severity} ${code(`${finding.file}${finding.line ? `:${finding.line}` : ''}`)}: ${cell(finding.message)}`,
            ),
          ]),
        )
      : ['No subtask reached its review.']),
    '',
    '## Merge log',
    '',
    ...(outcome.merges.length > 0
      ? [
          '| # | subtask | branch | result | integration head | combined DoD |',
          '|---|---|---|---|---|---|',
          ...outcome.merges.map(
            (merge, index) =>
              `| ${index + 1} | ${code(merge.subtask)} | ${code(merge.branch)} | ${merge.status}${merge.files?.length ? ` (${merge.files.map(code).join(', ')})` : ''} | ${code(merge.sha.slice(0, 12))} | ${merge.dod?.status ?? '-'} |`,
          ),
        ]
      : ['Nothing merged.']),
    '',
    '## Combined Definition of Done',
    '',
    ...dodLines(outcome.combinedDod),
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
  let text = renderProjectNote(input);
  if (input.redact) text = input.redact(text);
  await mkdir(stateDir, { recursive: true });
  const file = path.join(stateDir, `task-${input.taskId}.md`);
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, file);
  return { path: file, sha256: noteDigest(text) };
}
