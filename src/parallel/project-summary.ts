/** A project's plan and summary in the terms every task uses (the core's `Plan`, `TaskSummary`). */
import type { Plan, TaskSummary } from '../core/types.js';
import { EXIT_CODES } from '../errors.js';
import type { AcceptanceCriterion } from '../protocol/messages.js';
import type { ProjectOutcome } from './project-outcome.js';
import { combinedLine } from './combined-check.js';

/** A plan from the protocol's criteria (the core uses the protocol's criterion type as is). */
export function planOf(title: string, criteria: readonly AcceptanceCriterion[]): Plan {
  return { title, acceptanceCriteria: [...criteria] };
}

/** The summary `run` prints and `--json` ends with, for a project. */
export function projectSummary(input: {
  taskId: string;
  title: string;
  outcome: ProjectOutcome;
  integration: { branch: string; worktreePath: string };
  notePath: string;
  durationMs: number;
  interrupted: boolean;
}): TaskSummary {
  const { outcome, integration } = input;
  return {
    taskId: input.taskId,
    title: input.title,
    state: outcome.state,
    reason: outcome.reason,
    branch: integration.branch,
    headSha: outcome.headSha,
    notePath: input.notePath,
    worktreePath: integration.worktreePath,
    runs: outcome.subtasks.reduce(
      (sum, record) => sum + record.attempts.reduce((runs, attempt) => runs + attempt.runs, 0),
      0,
    ),
    metaCalls: outcome.metaCalls,
    usage: outcome.usage,
    durationMs: input.durationMs,
    exitCode:
      outcome.state === 'COMPLETE'
        ? EXIT_CODES.complete
        : input.interrupted
          ? EXIT_CODES.interrupted
          : outcome.state === 'FAILED'
            ? EXIT_CODES.failed
            : EXIT_CODES.needsReview,
    error: null,
    basis: [
      `${outcome.subtasks.filter((record) => record.state === 'merged').length} of ${outcome.subtasks.length} subtasks merged into ${integration.branch}`,
      outcome.combined
        ? `combined check on the integration head ${outcome.combined.headSha.slice(0, 12)} (DoD and every merged subtask's criteria): ${combinedLine(outcome.combined)}`
        : 'combined check: not run (nothing merged stayed)',
    ],
    // Each subtask's criteria and their evidence are in its own summary and note.
    criteria: [],
  };
}
