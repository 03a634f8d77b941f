/**
 * The end of every task, whatever stopped it: the terminal state, the commits of a run cut short brought
 * back, uncommitted work saved to a WIP ref, the sandbox stopped, the note written, the summary returned.
 */
import type { AgentRunnerError } from '../errors.js';
import { closingReason } from './completion-gate.js';
import { outcomeExitCode, outcomeReason, outcomeState, type TaskOutcome } from './outcome.js';
import type { TaskLoop } from './task-loop.js';
import {
  criteriaEvidence,
  lastAssessment,
  lastRecordedEvidence,
  summaryOf,
  type TaskRecord,
} from './task-record.js';
import type { TaskEvent } from './task-state.js';
import type { TaskSummary } from './types.js';
import { rootCauseOf } from './root-cause.js';
import { basisOf } from './validation.js';
import { timeoutSignal } from './timeout-signal.js';

export async function finishTask(
  loop: TaskLoop,
  outcome: TaskOutcome,
  error: AgentRunnerError | null,
): Promise<TaskSummary> {
  const state = outcomeState(outcome);
  // A task that ends with its work beside the task branch says where the work is, whatever ended it.
  // A follow-up's evidence is its own: what the runs before it proved is the "before" of its note.
  const ownRuns = loop.ownRuns();
  const reason = closingReason(
    outcomeReason(outcome),
    (loop.evidence ?? lastRecordedEvidence(ownRuns))?.facts,
  );
  if (loop.state !== state) loop.move(terminalEvent(loop, state, reason));
  // Over a disk cap, the uncommitted files are what filled it: `git add -A` would copy them into the
  // sandbox's .git and then into the person's repository. They stay in the sandbox repository.
  const overDiskCap = outcome.code === 'limit' && outcome.limit.code === 'disk';
  await saveWork(loop, state === 'COMPLETE' || overDiskCap);
  if (loop.sandboxId) await loop.deps.sandboxes.stop(loop.sandboxId).catch(() => undefined);
  const assessment = lastAssessment(ownRuns, loop.looseAssessment?.assessment);
  const latest = loop.evidence ?? lastRecordedEvidence(ownRuns);
  const followup = loop.options.followup;
  const record: TaskRecord = {
    taskId: loop.options.taskId,
    prd: loop.options.prd,
    state: loop.state,
    reason,
    plan: loop.plan,
    task: loop.task,
    runs: loop.runs,
    metaCalls: loop.ledger.metaCalls,
    usage: loop.ledger.usage(),
    startedAt: loop.startedAt,
    finishedAt: loop.deps.clock.now(),
    question: loop.question,
    preservedRef: loop.preservedRef,
    workerType: loop.options.worker.type,
    runDir: loop.options.runDir,
    error: error ? { code: error.code, message: error.message } : null,
    basis: basisOf(loop, latest, assessment),
    criteria: criteriaEvidence(loop.plan, latest, assessment),
    rootCause: state === 'COMPLETE' ? null : rootCauseOf(latest?.dod, latest?.criteriaChecks),
    baseline: loop.baseline,
    diskCaps: loop.deps.sandboxes.diskCaps?.() ?? null,
    sandboxRuntime: loop.deps.sandboxes.sandboxRuntime?.() ?? null,
    ...(followup
      ? {
          followup: {
            number: followup.number,
            instruction: followup.instruction,
            fromSha: followup.fromSha,
            before: followup.before,
            earlier: followup.earlier,
            ...(loop.followupChanges ? { changes: loop.followupChanges } : {}),
          },
        }
      : {}),
  };
  let notePath: string | null = null;
  try {
    const note = await loop.deps.writeNote(record);
    notePath = note.path;
    loop.emit({ type: 'note_written', ...note });
  } catch (noteError) {
    loop.emit({
      type: 'refused',
      reasons: [`the note could not be written: ${(noteError as Error).message}`],
    });
  }
  const summary = summaryOf(record, {
    notePath,
    exitCode: outcomeExitCode(outcome),
    // Where the branch is: the summary names the branch, so its head is the branch's, not a pending one.
    headSha: latest
      ? (latest.facts.taskBranch?.headSha ?? latest.facts.headSha)
      : (followup?.fromSha ?? null),
  });
  loop.emit({ type: 'task_finished', summary });
  return summary;
}

function terminalEvent(loop: TaskLoop, state: TaskRecord['state'], reason: string): TaskEvent {
  if (state === 'COMPLETE')
    return loop.state === 'VALIDATING'
      ? { type: 'complete' }
      : { type: 'fail', reason: 'complete outside validation' };
  return state === 'FAILED' ? { type: 'fail', reason } : { type: 'needs_review', reason };
}

/** The longest the finish spends bringing back the commits of a run cut short. */
export const FINISH_OBSERVE_MS = 10_000;
/**
 * The longest the finish spends saving uncommitted work to the WIP ref (the sandbox's git, then the fetch). Past
 * it the work is not lost: it stays in the sandbox repository on disk, where `resume` finds it. 10 s, not more:
 * after the wall clock the whole finish (this, the note, the container's removal) must end within 30 s, and a
 * worker's FIFO at `.git/config` makes this wait its whole bound (with 15 s a task ended 25.7 s after its
 * `--timeout`, alone on the machine).
 */
export const FINISH_PRESERVE_MS = 10_000;

/**
 * A run cut short (interrupt, error) was never observed: its commits come to the task branch now, so the note
 * and the branch show them; uncommitted work goes to a WIP ref before the sandbox goes away. Best effort: the
 * Docker engine may be what failed (the commits are still brought back then, from the sandbox repository on
 * the host, before the facts fail).
 */
async function saveWork(loop: TaskLoop, leaveUncommitted: boolean): Promise<void> {
  const { sandboxId } = loop;
  if (!sandboxId) return;
  const unobserved = loop.unobservedRun;
  // A replay that was itself cut is not started again: the finish must end within seconds of Ctrl-C, SIGTERM
  // or the wall clock; the commits stay in the sandbox repository, where `resume` finds them.
  if (unobserved !== null && !loop.observationCut) {
    const facts = await loop.deps.workspace
      .observe(sandboxId, timeoutSignal(FINISH_OBSERVE_MS))
      .catch(() => null);
    const record = loop.runs.find((run) => run.index === unobserved);
    if (facts) loop.emit({ type: 'facts', run: unobserved, facts });
    if (facts && record) {
      record.facts = facts;
      loop.recordRun(record);
    }
  }
  if (leaveUncommitted) return;
  // Bounded like the replay above: after a stop the worker's git files (a FIFO at .git/config) may block git in
  // the sandbox and the host's fetch; the note is written all the same.
  loop.preservedRef = await loop.deps.workspace
    .preserveUncommitted(sandboxId, {
      timeoutMs: FINISH_PRESERVE_MS,
      signal: timeoutSignal(FINISH_PRESERVE_MS),
    })
    .catch(() => null);
  if (loop.preservedRef) loop.emit({ type: 'preserved', ref: loop.preservedRef });
}
