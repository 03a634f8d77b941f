/**
 * The specification of a follow-up: an ended task (COMPLETE, NEEDS_REVIEW or FAILED) continued on its own
 * branch `agent-runner/<ID>` from its head, in a fresh sandbox, with a person's new instruction. It is the task's
 * next attempt (`resume`'s machinery: the plan, the runs and the worker's session from the journal, the first
 * run's baseline), with a budget of its own and the criteria it starts from (src/core/followup.ts). Throws a
 * UserError naming the fix when the task cannot be followed up.
 */
import { UserError } from '../errors.js';
import { inspectTaskLock } from '../lifecycle/task-lock.js';
import { journalPath, readTaskJournal, type JournalTaskState } from '../lifecycle/task-journal-state.js';
import { assertResumable, previousAttempt } from '../lifecycle/journal-resume.js';
import { readProjectJournal } from '../parallel/project-journal.js';
import { addUsage, ZERO_USAGE } from '../core/usage.js';
import { taskLayout } from '../workspace/layout.js';
import { configOf, startedPrd, type ResumeInput } from './resume-task-spec.js';
import type { TaskOrigin } from './remote-task.js';
import type { TaskSpec } from './task-spec.js';

export type FollowupInput = Omit<ResumeInput, 'newTimeout'> & {
  /** The person's instruction (`--message`, `--message-file`): quoted to the Meta-agent, never configuration. */
  instruction: string;
  /**
   * `remote`: the journal was rebuilt from the remote's task state (src/compose/remote-task.ts), which anyone
   * with push access can write. The follow-up then takes from it only the history and the plan to revise: not
   * the base's recorded DoD (a red check it lists would be excused), a skipped DoD, the forge, or a worker
   * session (none is on this machine: the worker starts a new one). Default `local`.
   */
  origin?: TaskOrigin;
};

/** The ended task's journal, or the one error that says why it cannot be followed up and what to do. */
function endedTask(
  input: FollowupInput,
): JournalTaskState & { finished: NonNullable<JournalTaskState['finished']> } {
  const { taskId } = input;
  const layout = taskLayout(input.repoRoot, taskId);
  if (readProjectJournal(layout.runDir))
    throw new UserError(
      'usage',
      `Task ${taskId} was split into subtasks; a follow-up continues one task. Follow up one of its subtasks ` +
        `(\`agent-runner status\` lists them as ${taskId}--<SUB>), or start a new task with \`agent-runner run --prd FILE\`.`,
    );
  const journal = readTaskJournal(layout.runDir, taskId);
  if (journal === null || journal.attempts === 0)
    throw new UserError(
      'task_not_found',
      `Task ${taskId} has no journal in ${layout.runDir}, so there is nothing to follow up. ` +
        'See `agent-runner status` for the tasks of this repository.',
    );
  const { finished } = journal;
  if (finished === null) {
    const lock = inspectTaskLock(layout.runDir);
    throw lock && lock.liveness !== 'dead'
      ? new UserError(
          'task_locked',
          `Task ${taskId} is running (agent-runner ${lock.holder.command}, pid ${lock.holder.pid}); a follow-up ` +
            `continues a task that has ended. Wait for it to end (\`agent-runner status ${taskId}\`), then run the follow-up again.`,
        )
      : new UserError(
          'usage',
          `Task ${taskId} did not end (its runner stopped during it); a follow-up continues a task that has ended. ` +
            `Finish it first with \`agent-runner resume ${taskId}\`, then run the follow-up again.`,
        );
  }
  assertResumable(journal, journalPath(layout.runDir));
  if (!journal.plan)
    throw new UserError(
      'usage',
      `Task ${taskId} ended ${finished.state} before it had acceptance criteria, so there is nothing to continue. ` +
        `Start it again with \`agent-runner run --prd FILE --task-id ${taskId}-2\`.`,
    );
  return { ...journal, finished };
}

export async function followupTaskSpec(input: FollowupInput): Promise<TaskSpec> {
  const { taskId } = input;
  const instruction = input.instruction.trim();
  if (instruction === '')
    throw new UserError(
      'usage',
      'The follow-up instruction is empty. Say what to change: `--message TEXT` or `--message-file FILE`.',
    );
  const journal = endedTask(input);
  const remote = input.origin === 'remote';
  const attempt = previousAttempt(journal);
  if (!attempt) throw new Error('an ended task with a plan has a previous attempt');
  const previous = remote ? untrustedHistory(attempt) : attempt;
  const { prd, prdPath } = await startedPrd(journal, input.cwd);
  const started = remote ? trustedOptions(journal.options, journal.baseSha) : journal.options;
  const number = (journal.followup?.number ?? 0) + 1;
  const { finished } = journal;
  return {
    repoRoot: input.repoRoot,
    prd,
    prdPath,
    taskId,
    ...(started?.base !== undefined ? { base: started.base } : {}),
    config: await configOf(input, started?.forge),
    env: input.env,
    keepSandbox: Boolean(input.keepSandbox),
    dodSkipped: Boolean(input.skipDod ?? started?.dodSkipped),
    ...(input.modelScript ? { models: { script: input.modelScript } } : {}),
    start: {
      kind: 'resume',
      attempt: journal.attempts + 1,
      // A budget of its own: what the task spent before is shown apart (`followup.earlier`), never counted.
      previous: {
        ...previous,
        metaCalls: 0,
        usage: ZERO_USAGE,
        workerUsage: ZERO_USAGE,
        elapsedMs: 0,
        feedback: [
          `This task ended ${finished.state} (${finished.reason}); the history above is from before. A person ` +
            `asks for follow-up ${number}: the instruction is quoted with the task. The work so far is on the task ` +
            'branch; every acceptance criterion is checked again on the new head.',
        ],
      },
      followup: {
        stage: 'new',
        number,
        instruction,
        fromSha: finished.headSha,
        before: finished.criteria,
        earlier: {
          runs: journal.runs.length,
          metaCalls: journal.metaCalls,
          usage: {
            meta: journal.metaUsage,
            worker: journal.workerUsage,
            total: addUsage(journal.metaUsage, journal.workerUsage),
          },
        },
      },
    },
  };
}

type PreviousAttempt = NonNullable<ReturnType<typeof previousAttempt>>;

/** The history of a remote state without what would weaken the bar or name a session this machine lacks. */
function untrustedHistory(previous: PreviousAttempt): PreviousAttempt {
  const { baseline: _baseline, ...rest } = previous;
  return {
    ...rest,
    threadId: null,
    runs: previous.runs.map((run) => ({ ...run, threadId: null })),
  };
}

/** Of a remote state's start options, the PRD alone (checked present when read); the base as its commit. */
function trustedOptions(
  options: JournalTaskState['options'],
  baseSha: string | null,
): JournalTaskState['options'] {
  if (options === null) return null;
  return {
    prdPath: options.prdPath,
    prd: options.prd,
    dodSkipped: false,
    ...(baseSha !== null ? { base: baseSha } : {}),
  };
}
