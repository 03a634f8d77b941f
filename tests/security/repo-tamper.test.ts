/**
 * The worker rewrites everything of the sandbox repository's git it can reach: other branches, tags, config
 * (an fsmonitor, a hooks path, a filter), hooks, packed refs, and commits a hostile tree (a symlink out of the
 * repository, an executable hook-looking file). The user's repository must not change beyond the task branch
 * and agent-runner's own refs, and host git must never run the sandbox's config or hooks. Canaries: the task
 * branch does get the worker's commit, and the planted fsmonitor and hook do run inside the sandbox.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { journalEvents } from '../support/faults-harness.js';
import { fetchFromSandbox } from '../../src/workspace/sandbox-repo/sync-back.js';
import { hostSecretFile, runHostileTask } from '../support/hostile-worker.js';
import { git } from '../support/task-repo.js';

interface RepoState {
  refs: string;
  config: string;
  hooks: string[];
  head: string;
  status: string;
}

function repoState(root: string): RepoState {
  return {
    refs: git(root, 'for-each-ref', '--format=%(refname) %(objectname)')
      .split('\n')
      .filter(
        (line) =>
          !line.startsWith('refs/heads/agent-runner/') &&
          !line.startsWith('refs/agent-runner/') &&
          // The evidence note host git writes on the task branch's head (src/verify/evidence-note.ts).
          !line.startsWith('refs/notes/agent-runner '),
      )
      .join('\n'),
    config: readFileSync(path.join(root, '.git', 'config'), 'utf8'),
    hooks: readdirSync(path.join(root, '.git', 'hooks')).sort(),
    head: `${git(root, 'symbolic-ref', 'HEAD')} ${git(root, 'rev-parse', 'HEAD')}`,
    status: git(root, 'status', '--porcelain', '--untracked-files=all', '--', ':!.agent-runner'),
  };
}

describe("the user's repository against a worker that tampers with git", () => {
  it('refs, tags, config and hooks tampered with inside change nothing of the user beyond the task branch', async () => {
    const hostDir = path.dirname(hostSecretFile('x'));
    const pwned = path.join(hostDir, 'pwned');
    const taskId = `sec-repo-tamper-${randomUUID().slice(0, 6)}`;
    let before: RepoState | null = null;
    const run = await runHostileTask(taskId, {
      prepare: ({ root }) => {
        git(root, 'tag', 'v1.0');
        git(root, 'branch', 'release');
        before = repoState(root);
      },
      commands: [
        [
          `run_pwn="mkdir -p ${hostDir} && touch ${pwned}"`,
          'git config core.fsmonitor "$run_pwn; false"',
          'git config core.hooksPath .git/evil-hooks',
          'git config filter.x.smudge "$run_pwn; cat"',
          'git config filter.x.clean "$run_pwn; cat"',
          'git config diff.external "$run_pwn"',
          'mkdir -p .git/evil-hooks',
          'for h in post-checkout post-merge pre-commit post-commit reference-transaction pre-push; do',
          '  printf "#!/bin/sh\\n%s\\n" "$run_pwn" > .git/hooks/$h; cp .git/hooks/$h .git/evil-hooks/$h',
          '  chmod +x .git/hooks/$h .git/evil-hooks/$h',
          'done',
          'git branch -f main HEAD 2>/dev/null; git update-ref refs/heads/release HEAD; git tag -f v1.0 HEAD',
          'git tag evil-tag; git branch evil-branch; git update-ref refs/remotes/origin/main HEAD',
          'echo "* filter=x" > .gitattributes',
          `ln -s ${hostDir} link-out`,
          'echo work > work.txt',
          'git add -A && git commit -q -m "work with a hostile tree"',
          'git status >/dev/null',
          `ls ${pwned} && echo PLANTED-CONFIG-RAN-INSIDE`,
        ].join('\n'),
      ],
    });
    const root = run.task.root;
    const recorded = JSON.stringify(journalEvents(root, taskId).filter((e) => e.type === 'run_recorded'));
    // Canaries: the planted config and hooks do run inside the sandbox; the worker's commit reaches the branch.
    expect(recorded, run.stderr).toContain('PLANTED-CONFIG-RAN-INSIDE');
    expect(git(root, 'log', '-1', '--format=%s', `agent-runner/${taskId}`)).toBe('work with a hostile tree');
    // Nothing ran on the host, and nothing of the user's changed.
    expect(existsSync(pwned)).toBe(false);
    expect(repoState(root)).toEqual(before);
  });

  it('a symlink planted in the sandbox .git (refs, objects) stops the fetch instead of being followed', async () => {
    const hostFile = hostSecretFile('0123456789012345678901234567890123456789\n');
    const taskId = `sec-repo-gitlink-${randomUUID().slice(0, 6)}`;
    const run = await runHostileTask(taskId, {
      commands: [
        [
          'echo work > work.txt && git add -A && git commit -q -m "work before the plant"',
          `ln -s ${hostFile} .git/refs/heads/planted`,
          'mkfifo .git/objects/info/stall 2>/dev/null; ls -la .git/refs/heads .git/objects/info',
        ].join('\n'),
      ],
    });
    const root = run.task.root;
    // Canary: the worker's commit is there, inside; without the plant it would come back (test above).
    expect(JSON.stringify(run.task.responses.responseRequests().at(-1)?.body)).toContain('planted ->');
    // The host refused to fetch (asked again now: the same answer), so the branch did not move.
    const again = await fetchFromSandbox({
      repoRoot: root,
      taskId,
      sourceRef: `refs/heads/agent-runner/${taskId}`,
      targetRef: `refs/agent-runner/sandbox/${taskId}`,
    });
    expect(again.problem).toMatch(/refs\/heads\/planted is a symlink or a special file/);
    // The refusal is a fact of the task: in the observed facts (--json), and in the note.
    const factEvents = run.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { type: string; facts?: { problems?: string[] } })
      .filter((event) => event.type === 'facts');
    expect(factEvents.at(-1)?.facts?.problems?.join('\n')).toMatch(/refs\/heads\/planted is a symlink/);
    const note = readFileSync(path.join(root, '.agent-runner', `task-${taskId}.md`), 'utf8');
    expect(note).toContain('**Facts incomplete**');
    expect(note).toMatch(/refs\/heads\/planted is a symlink or a special file/);
    expect(run.stdout).not.toContain('"state":"COMPLETE"');
    expect(git(root, 'rev-parse', `agent-runner/${taskId}`)).toBe(git(root, 'rev-parse', 'main'));
    expect(readFileSync(hostFile, 'utf8')).toBe('0123456789012345678901234567890123456789\n');
  });
});
