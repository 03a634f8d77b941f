/**
 * After a review round that ran nothing (no writer among the comments), its read record is all that changed, and
 * it stays on the machine that read it unless it is pushed: the next round (a later CI job, another node of a
 * fleet) would read the same comments again and reply about them again. So the record goes to the remote's task
 * state ref (`refs/agent-runner/tasks/<ID>`, which the last delivery pushed): that commit is kept whole (its
 * journal is the delivered one, never this machine's later work) with its `review.jsonl` replaced by this
 * machine's record, redacted as delivery redacts it; pushed with a lease on the commit it replaces, so a
 * delivery that moved the ref meanwhile is never overwritten. A task whose state was never delivered has nothing
 * to add to. Never throws: what did not go is said, and the local ref is put back.
 */
import path from 'node:path';
import { hostRemoteUrl, PUSH_CONFIG } from '../deliver/push.js';
import { STATE_IDENTITY, stateReviewRecord } from '../deliver/task-state-commit.js';
import type { Redactor } from '../notes/redact.js';
import { remoteCredential } from '../remote/remote-credentials.js';
import { TASK_STATE_REVIEW, taskStateRef } from '../remote/remote-task-state.js';
import { displayUrl, type ForgeKind } from '../remote/remote-url.js';
import { git, tryGit } from '../workspace/git/git-command.js';
import { resolveCommit } from '../workspace/git/tree-entries.js';
import { REVIEW_JOURNAL } from './review-record.js';

export interface ReviewRecordPush {
  repoRoot: string;
  taskId: string;
  runDir: string;
  /** The remote's name in `repoRoot` (`deliver.remote`). */
  remoteName: string;
  env: NodeJS.ProcessEnv;
  forgeOverride: ForgeKind | null;
  /** git config carrying the credential (a fleet node's); else the forge's token, as delivery finds it. */
  credentialConfig?: Record<string, string>;
  redact: Redactor;
  say: (line: string) => void;
}

/** Pushes the review record into the remote's task state; true when the remote has it now. */
export async function publishReviewRecord(input: ReviewRecordPush): Promise<boolean> {
  try {
    return await publish(input);
  } catch (error) {
    input.say(`the review record was not pushed: ${input.redact((error as Error).message)}`);
    return false;
  }
}

async function publish(input: ReviewRecordPush): Promise<boolean> {
  const cwd = input.repoRoot;
  const ref = taskStateRef(input.taskId);
  const before = await resolveCommit(cwd, ref);
  const record = stateReviewRecord(path.join(input.runDir, REVIEW_JOURNAL), input.redact);
  const remote = await hostRemoteUrl(cwd, input.remoteName);
  if (before === null || record === null || remote === null) return false;
  const listed = await git(['ls-tree', '-z', before], { cwd });
  const kept = listed
    .split('\0')
    .filter((entry) => entry !== '' && !entry.endsWith(`\t${TASK_STATE_REVIEW}`));
  const blob = (await git(['hash-object', '-w', '--stdin'], { cwd, input: record })).trim();
  const tree = (
    await git(['mktree', '-z'], {
      cwd,
      input: [...kept, `100644 blob ${blob}\t${TASK_STATE_REVIEW}`].map((entry) => `${entry}\0`).join(''),
    })
  ).trim();
  if (tree === (await git(['rev-parse', `${before}^{tree}`], { cwd })).trim()) return true;
  const commit = (
    await git(['commit-tree', tree, '-m', `agent-runner review record of ${input.taskId}`], {
      cwd,
      env: STATE_IDENTITY,
    })
  ).trim();
  await git(['update-ref', ref, commit, before], { cwd });
  const credentialConfig =
    input.credentialConfig ?? remoteCredential(remote, input.env, input.forgeOverride)?.gitConfig ?? {};
  const pushed = await tryGit(
    [
      'push',
      '--porcelain',
      '--no-verify',
      `--force-with-lease=${ref}:${before}`,
      remote.raw,
      `+${commit}:${ref}`,
    ],
    {
      cwd,
      config: { ...credentialConfig, ...PUSH_CONFIG },
      timeoutMs: 60_000,
    },
  ).catch((error: unknown) => ({ exitCode: -1, stdout: '', stderr: (error as Error).message }));
  if (pushed.exitCode === 0) return true;
  await tryGit(['update-ref', ref, before, commit], { cwd });
  const said = input.redact(`${pushed.stderr} ${pushed.stdout}`.replace(/\s+/g, ' ').trim()).slice(0, 300);
  input.say(
    `the review record was not pushed to ${displayUrl(remote.raw)} (${said}): the next round may read these ` +
      'comments again',
  );
  return false;
}
