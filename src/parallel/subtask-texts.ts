/** What the orchestrator tells the Meta-agent and the worker when a subtask is fixed up or planned again. Pure. */
import type { Plan } from '../core/types.js';
import type { ReviewFinding } from '../protocol/review.js';
import { combinedReport } from './combined-check.js';
import type { CombinedCheck } from './project-events.js';

/** The criteria of a fix-up task on the integration branch. */
export function fixupPlan(subtask: string): Plan {
  return {
    title: `Repair the combined tree after merging ${subtask}`,
    acceptanceCriteria: [
      {
        id: 'AC-1',
        description:
          "The Definition of Done passes on the combined tree (every merged subtask together), with each subtask still doing what it was for: every merged subtask's acceptance checks pass on it too.",
        type: 'test',
        critical: true,
      },
    ],
  };
}

/** The PRD of a fix-up task: what failed on the combined tree, and the whole project. */
export function fixupPrd(subtask: string, check: CombinedCheck, projectPrd: string): string {
  return [
    `# Repair the integration branch after merging subtask ${subtask}`,
    '',
    `Several subtasks of one project were built separately and merged. Each passed its checks alone, but after merging \`${subtask}\` the combined tree fails (the Definition of Done, or a merged subtask's own acceptance check):`,
    '',
    combinedReport(check),
    '',
    "Make the combined tree pass without undoing what any subtask was for: every subtask's acceptance checks run again on the combined tree, and the fix-up is reviewed for what it changed of their work. The whole project was:",
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
