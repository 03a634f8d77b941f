/** What the orchestrator tells the Meta-agent and the worker when a subtask is fixed up or planned again. Pure. */
import type { DodOutcome, Plan } from '../core/types.js';
import type { ReviewFinding } from '../protocol/review.js';

/** The criteria of a fix-up task on the integration branch. */
export function fixupPlan(subtask: string): Plan {
  return {
    title: `Repair the combined tree after merging ${subtask}`,
    acceptanceCriteria: [
      {
        id: 'AC-1',
        description:
          'The Definition of Done passes on the combined tree (every merged subtask together), with each subtask still doing what it was for.',
        type: 'test',
        critical: true,
      },
    ],
  };
}

export function dodReport(dod: DodOutcome): string {
  return dod.results
    .filter((result) => result.status !== 'passed')
    .map(
      (result) => `- \`${result.command}\` ${result.status} (exit ${result.exitCode}):\n${result.outputTail}`,
    )
    .join('\n');
}

/** The PRD of a fix-up task: what failed on the combined tree, and the whole project. */
export function fixupPrd(subtask: string, dod: DodOutcome, projectPrd: string): string {
  return [
    `# Repair the integration branch after merging subtask ${subtask}`,
    '',
    `Several subtasks of one project were built separately and merged. Each passed its checks alone, but after merging \`${subtask}\` the Definition of Done fails on the combined tree:`,
    '',
    dodReport(dod),
    '',
    'Make the combined tree pass without undoing what any subtask was for. The whole project was:',
    '',
    projectPrd,
  ].join('\n');
}

/** A subtask's PRD for its next attempt: the old one, why it was not merged, and the review's findings. */
export function replannedPrd(prd: string, reason: string, findings: readonly ReviewFinding[]): string {
  const findingText = findings.map(
    (finding) =>
      `- ${finding.file}${finding.line ? `:${finding.line}` : ''} (${finding.severity}): ${finding.message}`,
  );
  return [
    prd.trimEnd(),
    '',
    `An earlier attempt of this subtask was not merged: ${reason}`,
    ...(findingText.length ? ['', 'Findings of the review:', ...findingText] : []),
  ].join('\n');
}
