/**
 * A webhook's task from an issue, delivered by the fleet's node that ends it (FleetTaskBoards, as `serve --control`
 * runs it), with real git over `git http-backend` and the scripted GitHub server (validated against GitHub's
 * OpenAPI description). The task ended on a node that died before the fleet heard of it (its branch on the remote,
 * its journal in the fleet's copy): the node that takes the job again delivers it as `run --pr --closes N` does,
 * pushing from where the branch is (no refused lease), a request closing the issue and one reply on it, with its
 * own token; a third node given the job again delivers nothing twice. A forge that refuses the request: the
 * refusal is in the delivery record and the node's log, and the task's end stays COMPLETE.
 * The task that runs to its end on the node (a sandbox and a worker) takes the same delivery step after its last push.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { readDeliveries } from '../../src/deliver/delivery-record.js';
import { cacheDirectory } from '../../src/remote/repository-cache.js';
import { taskLayout } from '../../src/workspace/layout.js';
import { createFinishedTask, type FinishedTask } from '../support/finished-task.js';
import { fleetNodeBoards, journalLines } from '../support/fleet-node-boards.js';
import { deliverFleetTask } from '../../src/serve/fleet-delivery.js';
import { Redaction } from '../../src/notes/redact.js';
import { GitHttpRemote } from '../support/git-http-remote.js';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';

const ID = 'add-slugify-1a2b3c';
const TOKEN = 'ghs_fleetIssueNodeToken0123456789abcd';
let remote: GitHttpRemote;
let github: ScriptedGitHubServer;
let task: FinishedTask;
let journal: string[];
let repoUrl: string;

beforeEach(async () => {
  remote = await new GitHttpRemote({ user: 'x-access-token', password: TOKEN }).start();
  github = await new ScriptedGitHubServer().start();
  task = await createFinishedTask({ taskId: ID });
  writeFileSync(
    path.join(task.repo.root, 'agent-runner.yaml'),
    `deliver:\n  forge: github\n  apiUrl: ${github.url}\n`,
  );
  task.repo.git('add', 'agent-runner.yaml');
  task.repo.git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'config');
  // The node that ran the task pushed its branch before it died.
  const bare = await remote.createFrom('acme/app', task.repo.root);
  task.repo.git('push', '-q', bare, `${task.branch}:refs/heads/${task.branch}`);
  journal = journalLines(task.runDir);
  repoUrl = remote.url('acme/app').replace('http://', `http://x-access-token:${TOKEN}@`);
}, 60_000);

afterEach(async () => {
  await github.stop();
  await remote.stop();
  rmSync(task.repo.root, { recursive: true, force: true });
});

/** A node of its own (its own state directory, its own cache), given the task's job; its log lines. */
async function takeOnNewNode(generation: number) {
  const { boards, lines, env } = fleetNodeBoards(journal, TOKEN);
  const end = await boards.run({
    taskId: ID,
    repoUrl,
    base: null,
    prd: '# Add slugify\n',
    generation,
    resume: true,
    deliver: { pr: true, closes: 7 },
  });
  const runDir = taskLayout(cacheDirectory(env, repoUrl), ID).runDir;
  return { end, lines, runDir };
}

it('the node that ends an issue task delivers it once: a request closing the issue, one reply', async () => {
  const first = await takeOnNewNode(2);
  expect(first.end).toEqual({ state: 'COMPLETE', exitCode: 0 });
  expect(first.lines.join('\n')).toContain(`task ${ID}: delivered: https://github.test/acme/app/pull/1`);
  const pull = github.pulls.get(1) as { body: string; head: { ref: string }; base: { ref: string } };
  expect(pull.body.trimEnd().endsWith('Closes #7')).toBe(true);
  expect([pull.head.ref, pull.base.ref]).toEqual([task.branch, 'main']);
  expect(github.review.repliesOn(7).map((reply) => reply.body)).toEqual([
    'agent-runner worked on this issue: the task ended **COMPLETE**; its request (ready for review): https://github.test/acme/app/pull/1',
  ]);
  // With the node's own token; never in its log.
  expect(github.calls.every((call) => String(call.authorization).includes(TOKEN))).toBe(true);
  expect(first.lines.join('\n')).not.toContain(TOKEN);
  const [outcome] = readDeliveries(first.runDir);
  expect(outcome).toMatchObject({ pushed: true, sha: task.head, error: null });

  // The job given to yet another node (this one died before the fleet heard of the end): nothing twice.
  const calls = github.calls.length;
  const second = await takeOnNewNode(3);
  expect(second.end).toEqual({ state: 'COMPLETE', exitCode: 0 });
  expect(github.calls.length).toBe(calls);
  expect(github.review.repliesOn(7)).toHaveLength(1);
  github.assertValid();
}, 120_000);

it('a request the forge refuses: recorded and logged, the task stays COMPLETE, the issue gets no reply', async () => {
  github.failNext('create', 403, { message: 'Resource not accessible by integration' });
  const taken = await takeOnNewNode(2);
  expect(taken.end).toEqual({ state: 'COMPLETE', exitCode: 0 });
  expect(taken.lines.join('\n')).toMatch(new RegExp(`task ${ID}: delivery failed: .*403`));
  const [outcome] = readDeliveries(taken.runDir);
  expect(outcome).toMatchObject({ pushed: true, url: null, error: { kind: 'permission' } });
  expect(github.review.repliesOn(7)).toEqual([]);
}, 120_000);

it("pushes with the node's own lease: a branch ahead of where the node left it goes; one someone else moved is refused", async () => {
  // The node pushed `task.head` after a worker run, then the task committed once more before it ended.
  let pushed = task.head;
  const last = task.addCommit('The last worker run');
  task.repo.git('remote', 'add', 'origin', repoUrl);
  const lines: string[] = [];
  const deliver = () =>
    deliverFleetTask({
      root: task.repo.root,
      taskId: ID,
      deliver: { pr: true, closes: 7 },
      baseBranch: 'main',
      pushed,
      credentialConfig: {},
      env: { ...process.env, GH_TOKEN: TOKEN },
      redaction: new Redaction(),
      log: (line) => lines.push(line),
    });
  await deliver();
  // The task's own delivery record knows no push of the node's: the push went on the node's lease alone.
  expect(lines).toEqual([`task ${ID}: delivered: https://github.test/acme/app/pull/1`]);
  expect(await remote.ref('acme/app', `refs/heads/${task.branch}`)).toBe(last);

  // Someone else pushed to the branch since the node's last push: its lease no longer holds, nothing is lost.
  pushed = last;
  const theirs = task.addCommit('Pushed by someone else');
  // (asynchronously: the remote's server runs in this process)
  await execa('git', ['push', '-q', 'origin', `${theirs}:refs/heads/${task.branch}`], {
    cwd: task.repo.root,
  });
  task.repo.git('update-ref', `refs/heads/${task.branch}`, last);
  lines.length = 0;
  await deliver();
  expect(lines.join('\n')).toMatch(new RegExp(`task ${ID}: delivery failed: `));
  expect(await remote.ref('acme/app', `refs/heads/${task.branch}`)).toBe(theirs);
}, 120_000);
