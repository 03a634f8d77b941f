/**
 * What a resumed attempt or a follow-up builds on from a task's folded journal: the check that the journal can
 * be built on at all, and the earlier attempt as the TaskRunner takes it (with what the Meta-agent must hear
 * about the gap).
 */
import { planSchema, runRecordSchema } from '../core/records.js';
import type { Baseline, Plan, RunRecord, Usage } from '../core/types.js';
import { subtractUsage } from '../core/usage.js';
import { UserError } from '../errors.js';
import type { JournalTaskState } from './task-journal-state.js';

/**
 * Checks what resume will build on against the record schemas: a journal edited by hand, or written by an
 * incompatible version, is refused with the first problem rather than half-read.
 */
export function assertResumable(state: JournalTaskState, file: string): void {
  const problems: string[] = [];
  if (state.plan) {
    const plan = planSchema.safeParse(state.plan);
    if (!plan.success) problems.push(`plan: ${plan.error.issues[0]?.message ?? 'invalid'}`);
  }
  for (const run of state.runs) {
    const parsed = runRecordSchema.safeParse(run);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      problems.push(`run ${run.index} ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
    }
  }
  if (problems.length > 0)
    throw new UserError(
      'usage',
      `The journal ${file} of task ${state.taskId} cannot be resumed: ${problems.slice(0, 3).join('; ')}. ` +
        `Start the task again with \`agent-runner run --prd FILE --task-id NEW-ID\`.`,
    );
}

/** The `previous` a resumed TaskRunner starts from, with what the Meta-agent must hear about the gap. */
export function previousAttempt(state: JournalTaskState): {
  plan: Plan;
  runs: RunRecord[];
  threadId: string | null;
  metaCalls: number;
  usage: Usage;
  workerUsage: Usage;
  feedback: string[];
  elapsedMs: number;
  baseline?: Baseline;
} | null {
  if (!state.plan) return null;
  const feedback = [
    `This task was resumed after ${state.finished ? `it ended ${state.finished.state} (${state.finished.reason})` : 'the runner stopped unexpectedly'}; ` +
      'the history above is from the earlier attempt(s). Commits the worker made are on the task branch and its ' +
      'uncommitted files are still in the sandbox repository.',
  ];
  if (state.unfinishedRun) {
    feedback.push(
      `Worker run ${state.unfinishedRun.run} (${state.unfinishedRun.mode}) was cut short when the runner died; ` +
        'it has no result and its worker was stopped. Its thread can be resumed; check what it left before deciding.',
    );
  }
  // A follow-up's limits count what was spent since it began; the spending before it is shown apart.
  const before = state.followup;
  return {
    plan: state.plan,
    runs: state.runs,
    threadId: state.threadId,
    metaCalls: state.metaCalls - (before?.earlier.metaCalls ?? 0),
    usage: before ? subtractUsage(state.metaUsage, before.earlier.usage.meta) : state.metaUsage,
    workerUsage: before ? subtractUsage(state.workerUsage, before.earlier.usage.worker) : state.workerUsage,
    feedback: [
      ...feedback,
      ...state.answers.map(
        ({ question, answer }) => `Earlier, the person was asked "${question}" and answered: ${answer}`,
      ),
    ],
    elapsedMs: Math.max(0, state.elapsedMs - (before?.elapsedBefore ?? 0)),
    ...(state.baseline ? { baseline: state.baseline } : {}),
  };
}
