/**
 * The gate checks the branch, not a shadow of it. The worker makes a normal commit, then, with git plumbing, a
 * commit whose tree holds a 300-byte file name that no checkout on the host can write. The person's worktree
 * cannot take it, so the task branch stays at the base and the work waits on the pending ref, while the DoD
 * (the repository's `npm test`) passes in the sandbox and the scripted assessment says done: only the gate's
 * "the task branch holds the head the checks ran on" stands between the attack and COMPLETE.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { COMMIT_SLUG, journalEvents, readNote } from '../support/faults-harness.js';
import { runHostileTask, summaryOf } from '../support/hostile-worker.js';
import { runWorkerReply } from '../support/meta-replies.js';
import { git } from '../support/task-repo.js';

/** Longer than any file name a host file system takes (NAME_MAX is 255 bytes). */
const LONG_NAME = 'n'.repeat(300);

/** Commits a file named LONG_NAME on the task branch without ever creating it, and keeps `git status` clean. */
function shadowCommit(branch: string): string {
  return [
    'set -e',
    `long=${LONG_NAME}`,
    "blob=$(printf 'shadow\\n' | git hash-object -w --stdin)",
    'tree=$( { git ls-tree HEAD; printf "100644 blob %s\\t%s\\n" "$blob" "$long"; } | git mktree)',
    'commit=$(git commit-tree "$tree" -p HEAD -m "Add a file no checkout can hold")',
    `git update-ref refs/heads/${branch} "$commit"`,
    // The index agrees with the new head and the missing file is not a change: the sandbox looks clean.
    'git update-index --add --cacheinfo 100644,"$blob","$long"',
    'git update-index --skip-worktree "$long"',
    'echo "uncommitted: $(git status --porcelain | wc -l)"',
  ].join('\n');
}

describe('a commit the person cannot check out', () => {
  it('leaves the work on the pending ref, and the task is not COMPLETE', async () => {
    const taskId = `sec-branch-shadow-${randomUUID().slice(0, 6)}`;
    const branch = `agent-runner/${taskId}`;
    const pendingRef = `refs/agent-runner/pending/${taskId}`;
    const run = await runHostileTask(taskId, {
      commands: [COMMIT_SLUG, shadowCommit(branch)],
      // After the refusal the Meta-agent asks for a fix; the run limit (1) ends the task there.
      then: [
        runWorkerReply('Rename the file with the long name so that a checkout can hold it, and commit.'),
      ],
    });
    const root = run.task.root;
    const summary = summaryOf(run);

    // The attack ran: the pending ref holds both commits and the long name, and the DoD passed on them.
    expect(git(root, 'ls-tree', '--name-only', pendingRef).split('\n'), run.stderr).toContain(LONG_NAME);
    expect(git(root, 'log', '--format=%s', `main..${pendingRef}`).split('\n')).toEqual([
      'Add a file no checkout can hold',
      'Add slugify',
    ]);
    const events = journalEvents(root, taskId);
    const dod = events.filter((event) => event.type === 'dod');
    expect(JSON.stringify(dod.at(-1))).toContain('"status":"passed"');
    // The checks ran on that very head (the sandbox's checkout), so the branch is the only thing refused.
    const record = events.filter((event) => event.type === 'run_recorded').at(-1)?.record as
      { checkedHead?: string | null; refusals: string[] } | undefined;
    expect(record?.checkedHead).toBe(git(root, 'rev-parse', pendingRef));
    expect(record?.refusals).toHaveLength(1);
    expect(record?.refusals[0]).toMatch(/^the work is not on the task branch: /);

    // It failed: not COMPLETE, and the reason says where the work is and how to look at it.
    expect(summary.state).not.toBe('COMPLETE');
    expect(run.code).not.toBe(0);
    const reason = String(summary.reason);
    expect(reason).toContain(`the work is not on the task branch: ${branch}`);
    expect(reason).toContain(`kept at ${pendingRef}`);
    expect(reason).toContain(`git log ${pendingRef}`);
    expect(reason).toContain('File name too long');
    // git's message is cut: the worker's 300-byte name does not come through whole.
    expect(reason).not.toContain(LONG_NAME);
    // The Meta-agent was told, as feedback for its next decision (plan, decide, assess, decide).
    expect(JSON.stringify(run.task.chat.requests[3]?.body)).toContain(`kept at ${pendingRef}`);
    // The task branch does not claim the work.
    expect(git(root, 'rev-parse', branch)).toBe(git(root, 'rev-parse', 'main'));
    expect(summary.headSha).toBe(git(root, 'rev-parse', 'main'));
    expect(git(root, 'ls-tree', '--name-only', branch)).not.toContain('slug.js');
    // Nor does the note: the commits are named where they are, never "on the task branch".
    const note = readNote(root, taskId);
    expect(note).toContain(`git log ${pendingRef}`);
    expect(note).not.toMatch(/commit\(s\) on the task branch/);
    expect(note).not.toContain(`Commits on \`${branch}\``);
    expect(note).toContain(`Commits since the base, at \`${pendingRef}\``);
  });
});
