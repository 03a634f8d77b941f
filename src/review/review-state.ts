/**
 * The review record as the task's state on the remote carries it (`refs/agent-runner/tasks/<ID>`, written at
 * delivery), merged into this machine's before a read of the review: a fresh CI runner or another node of a
 * fleet then starts where the last follow-up from review stopped. A record the state holds that is not what
 * agent-runner writes is not used at all (the reason is returned, for the caller to say).
 */
import { readTaskState, taskStateRef, type StateReviewRecord } from '../remote/remote-task-state.js';
import { tryGit } from '../workspace/git/git-command.js';
import { mergeRemoteReviewRecord } from './review-record.js';

/** Merges a state's review record into the one in `runDir`; returns why it was not used, or null. */
export function mergeStateReview(review: StateReviewRecord, runDir: string, ref: string): string | null {
  if (review === null) return null;
  const problem =
    'problem' in review
      ? review.problem
      : mergeRemoteReviewRecord(runDir, review.text, `the review record of ${ref}`);
  return problem === null
    ? null
    : `${problem}: not used; the review is read as this machine's record says (from its start when it has none)`;
}

/**
 * The review record of the state the clone `root` fetched for `taskId` (when it has one), merged into `runDir`'s.
 * Returns why it was not used, or null.
 */
export async function mergeFetchedReview(
  root: string,
  taskId: string,
  runDir: string,
): Promise<string | null> {
  const ref = taskStateRef(taskId);
  const present = await tryGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd: root });
  if (present.exitCode !== 0) return null;
  try {
    return mergeStateReview((await readTaskState(root, ref, taskId)).review, runDir, ref);
  } catch (error) {
    return `${(error as Error).message} Its review record is not used.`;
  }
}
