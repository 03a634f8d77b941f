/**
 * The review loop on a fleet, end to end: one `serve --control` node (started in this process as
 * tests/e2e/control-fleet.test.ts starts its nodes, a pure node on the real PostgreSQL of
 * tests/support/control-database.ts) with the real codex binary in a real Docker sandbox, a remote served by
 * `git http-backend` (the node's credential its forge token), the models scripted, GitHub's API
 * scripted and validated against its OpenAPI description. The deliveries are GitHub's published examples
 * (@octokit/webhooks-examples) with this repository's fields, signed here with the webhook's secret:
 * 1. `issues.labeled` by a writer: the fleet queues one task, the node runs it COMPLETE and delivers a pull
 *    request that closes the issue; the issue gets one reply with the request's page; the branch is on the remote.
 * 2. `pull_request_review_comment.created` by a writer on that request's branch, with the trigger phrase: the
 *    node reads the review through the forge, reacts with `eyes`, runs the follow-up on the same branch (a new
 *    commit whose parent is the first head, pushed), updates the same request and replies once, naming the
 *    comment and the follow-up's state. The comment carries a mention and a link: the reply quotes them inert.
 * One task run and one follow-up serve every assertion.
 * 3. A task the fleet never ran (a person's `run --pr` on their machine) and a writer's line comment on its
 *    request at a node: the fleet adopts the task, the node rebuilds it from the remote's state ref and runs the
 *    follow-up on the same branch and request, with one reply.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { processRedaction, safeOutput } from '../../src/cli/output.js';
import { startServer } from '../../src/cli/serve-command.js';
import { runCliCaptured } from '../support/cli.js';
import { createMigratedDatabase, type TestDatabase } from '../support/control-database.js';
import { codexTurn, commitSlugTurn, scriptedRunEnv } from '../support/demo-task.js';
import { AC1, AC2, SLUG_PUNCTUATION_JS } from '../support/followup-criteria.js';
import { nodeRepoOnGitHub } from '../support/github-repo.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { taskContainers } from '../support/task-containers.js';
import { git, writeFileCommand } from '../support/task-repo.js';
import { example, labelledIssue } from '../support/webhook-examples.js';

const models = scriptedModelServers();
const KEY = 'e2e-fleet-loop-key-51be';
const TOKEN = 'ghp_e2eFleetLoopToken0123456789abcdefABCD';
const SECRET = 'e2e-fleet-loop-secret-of-the-team-7a2f';
const ISSUE = 12;
const ISSUE_BODY = 'Add `slugify(text)` in slug.js: lower-case, words joined by "-". With a test.';
/** A writer's line comment: the trigger, and a mention and a link the reply must quote inert. */
const COMMENT = '@agent-runner drop punctuation too, as @someone asked in https://evil.example/x';
const WORD_JOINER = '\u2060';

let db: TestDatabase;

beforeAll(async () => {
  db = await createMigratedDatabase();
}, 600_000);

afterAll(async () => {
  await db?.drop();
});

/** Signed as GitHub signs a delivery of `event` with the webhook's secret. */
function signed(event: string, payload: unknown): RequestInit {
  const body = JSON.stringify(payload);
  return {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
    },
  };
}

/**
 * A pure node (a directory in no repository: its agent-runner.yaml gives the capacity and the forge's API) with
 * a state directory of its own. Its credential for the remote is its forge token: the remote's host names no
 * forge (as GitHub Enterprise's does not), so the node names it (AGENT_RUNNER_FORGE).
 */
async function startNode(apiUrl: string) {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-fleet-loop-node-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    path.join(dir, 'agent-runner.yaml'),
    `parallel:\n  max: 1\ndeliver:\n  forge: github\n  apiUrl: ${apiUrl}\n`,
  );
  const env = scriptedRunEnv(models, KEY, {
    GH_TOKEN: TOKEN,
    AGENT_RUNNER_FORGE: 'github',
    AGENT_RUNNER_WEBHOOK_SECRET: SECRET,
    XDG_STATE_HOME: path.join(dir, 'state'),
  });
  delete env.AGENT_RUNNER_CONTROL_URL;
  const redaction = processRedaction(env);
  const log: string[] = [];
  const server = await startServer(
    { port: '0', control: db.nodeUrl },
    {
      output: safeOutput({ out: (t) => log.push(t), err: (t) => log.push(t), isTTY: false }, redaction),
      redaction,
      env,
      cwd: dir,
      setExitCode: () => undefined,
    },
  );
  return { server, log, state: path.join(dir, 'state') };
}

type FleetNode = Awaited<ReturnType<typeof startNode>>;

/** A delivery to the node's GitHub webhook: its status and JSON answer. */
async function postWebhook(node: FleetNode, init: RequestInit) {
  const response = await fetch(`${node.server.info.url}/api/webhooks/github`, init);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A task's row in the fleet's database, read as the database's owner. */
async function rowReader() {
  const reader = new pg.Client({ connectionString: db.url });
  await reader.connect();
  onTestFinished(() => reader.end());
  return async (taskId: string) =>
    (
      await reader.query<{ state: string; ended_at: Date | null; node_id: string | null; prd: string }>(
        'SELECT state, ended_at, node_id, prd FROM agent_runner.tasks WHERE id = $1',
        [taskId],
      )
    ).rows[0];
}

/** Nothing of task `taskId` is left on the node when the test ends: its containers carry the node's clone. */
function noContainersLeft(node: FleetNode, taskId: () => string): void {
  onTestFinished(async () => {
    await node.server.close();
    const caches = path.join(node.state, 'agent-runner', 'repos');
    for (const cache of readdirSync(caches, { withFileTypes: true }))
      if (cache.isDirectory() && taskId())
        expect(await taskContainers(taskId(), path.join(caches, cache.name))).toEqual([]);
  });
}

/** GitHub's `pull_request_review_comment.created` example: `user`'s line comment on request 1 of `branch`. */
function lineComment(input: { commentId: number; body: string; branch: string; cloneUrl: string }) {
  const review = example('pull_request_review_comment', 'created');
  review.comment.id = input.commentId;
  review.comment.body = input.body;
  review.comment.user.login = 'maya';
  review.pull_request.number = 1;
  review.pull_request.head.ref = input.branch;
  review.pull_request.head.repo.full_name = 'acme/app';
  review.repository.full_name = 'acme/app';
  review.repository.name = 'app';
  review.repository.clone_url = input.cloneUrl;
  review.sender.login = 'maya';
  return review;
}

/** The follow-up a review asks for: AC-2 added, codex makes slugify drop punctuation and commits. */
function scriptPunctuationFollowup(taskId: string): void {
  models.chat.push(
    { reply: planReply(taskId, [AC1, AC2]) },
    { reply: runWorkerReply('Make slugify drop punctuation; commit.') },
    { reply: assessmentReply(true, ['AC-1', 'AC-2'], 'Both hold.') },
  );
  models.responses.enqueue(
    ...codexTurn(
      [writeFileCommand('slug.js', SLUG_PUNCTUATION_JS), 'git commit -q -am "Drop punctuation in slugify"'],
      'Committed.',
    ),
  );
}

/** The repository on the scripted GitHub, its agent-runner.yaml naming the forge its requests go to. */
function configuredRepo() {
  return nodeRepoOnGitHub(TOKEN, (root, server) => {
    writeFileSync(
      path.join(root, 'agent-runner.yaml'),
      `deliver:\n  forge: github\n  apiUrl: ${server.url}\n`,
    );
    git(root, 'add', 'agent-runner.yaml');
    git(root, 'commit', '-q', '-m', 'agent-runner configuration');
  });
}

describe('the review loop on a fleet node (end to end)', () => {
  it('an issue’s webhook becomes a pull request; a writer’s line comment becomes a follow-up on it, answered once', async () => {
    const started = Date.now();
    const { remote, github } = await configuredRepo();
    github.review.permissions.set('maya', 'write');
    const cloneUrl = remote.url('acme/app');

    const node = await startNode(github.url);
    let taskId = '';
    noContainersLeft(node, () => taskId);
    const rowOf = await rowReader();
    const row = () => rowOf(taskId);
    const post = (init: RequestInit) => postWebhook(node, init);
    const logs = () => node.log.join('\n');

    // 1. A writer labels the issue: the fleet queues one task, the node runs it with codex and delivers it.
    const labelled = labelledIssue({
      number: ISSUE,
      title: 'Add a slugify helper',
      body: ISSUE_BODY,
      cloneUrl,
      sender: 'maya',
    });
    models.responses.enqueue(...commitSlugTurn());
    const queued = await post(signed('issues', labelled));
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    taskId = String(queued.body.taskId);
    expect(taskId).toMatch(/^issue-12-[0-9a-f]{6}$/);
    // The plan names the task's id, known from the answer: the node prepares the sandbox before it plans.
    models.chat.push(
      { reply: planReply(taskId, [AC1]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'slugify works.') },
    );
    // The fleet's task ends (after its delivery, which replies on the issue).
    await vi.waitFor(async () => expect((await row())?.ended_at, logs()).not.toBeNull(), {
      timeout: 240_000,
      interval: 500,
    });
    expect((await row())?.state, logs()).toBe('COMPLETE');
    const branch = `agent-runner/${taskId}`;
    const firstHead = await remote.ref('acme/app', branch);
    expect(firstHead, logs()).toMatch(/^[0-9a-f]{40}$/);
    // The forge's side: one request from the task's branch, its body closing the issue, one reply on the issue.
    expect(github.pulls.size).toBe(1);
    const pull = github.pulls.get(1) as { body: string; html_url: string; head: { ref: string } };
    expect(pull.head.ref).toBe(branch);
    expect(pull.body.trimEnd().endsWith(`Closes #${ISSUE}`)).toBe(true);
    expect(github.review.repliesOn(ISSUE).map((reply) => reply.body)).toEqual([
      `agent-runner worked on this issue: the task ended **COMPLETE**; its request (ready for review): ${pull.html_url}`,
    ]);
    expect(github.review.repliesOn(1)).toEqual([]);
    expect(models.chat.requests).toHaveLength(3);

    // 2. A writer's line comment on the request, with the trigger phrase, a mention and a link.
    github.setHead(1, { sha: firstHead as string });
    const commentId = github.review.addReviewComment(1, {
      user: 'maya',
      association: 'COLLABORATOR',
      body: COMMENT,
      path: 'slug.js',
      line: 1,
      diffHunk: '@@ -0,0 +1 @@\n+exports.slugify = (text) => text.trim().toLowerCase();',
    });
    const review = lineComment({ commentId, body: COMMENT, branch, cloneUrl });
    scriptPunctuationFollowup(taskId);
    const followup = await post(signed('pull_request_review_comment', review));
    expect(followup.status, JSON.stringify(followup.body)).toBe(202);
    expect(followup.body).toEqual({ action: 'followup', taskId, request: `${github.url}/acme/app/pull/1` });
    // The follow-up's reply is its last step on the node; then the fleet's task ends again.
    await vi.waitFor(() => expect(github.review.repliesOn(1), logs()).toHaveLength(1), {
      timeout: 240_000,
      interval: 500,
    });
    await vi.waitFor(async () => expect((await row())?.ended_at, logs()).not.toBeNull(), {
      timeout: 60_000,
      interval: 500,
    });
    expect((await row())?.state, logs()).toBe('COMPLETE');
    expect(models.chat.requests).toHaveLength(6);

    // Received: eyes on the line comment. The follow-up's commit on the same branch, after the first head.
    expect(github.review.reactions).toEqual([{ on: 'review_comment', commentId, content: 'eyes' }]);
    const secondHead = await remote.ref('acme/app', branch);
    expect(secondHead).not.toBe(firstHead);
    expect(await remote.ref('acme/app', `${branch}^`)).toBe(firstHead);
    expect(git(remote.path('acme/app'), 'show', `${secondHead}:slug.js`)).toBe(SLUG_PUNCTUATION_JS.trimEnd());
    // The node pushed the branch after each worker run itself (its forge token as the credential), besides the
    // two deliveries' pushes: a push of each run's new commit, then each delivery's of the task's state.
    const pushes = remote.requests.filter(
      (request) => request.method === 'POST' && request.target.endsWith('/git-receive-pack'),
    );
    expect(pushes.length, logs()).toBeGreaterThanOrEqual(4);
    expect(remote.requests.filter((request) => !request.authorized)).toEqual([]);
    expect(logs()).not.toContain('did not accept');
    // The same request, its body refreshed; no second request; nothing more on the issue.
    expect(github.pulls.size).toBe(1);
    expect((github.pulls.get(1) as { body: string }).body).toContain('## Follow-up 1');
    expect(github.calls.filter((call) => call.operation === 'create')).toHaveLength(1);
    expect(github.review.repliesOn(ISSUE)).toHaveLength(1);

    // The one reply: the comment by its author and place, the follow-up's state, the new head.
    const reply = String(github.review.repliesOn(1)[0]?.body);
    expect(reply).toContain('inline comment by `maya` on slug.js line 1');
    expect(reply).toContain('taken into follow-up 1, which ended COMPLETE');
    expect(reply).toContain(`The branch's head is now \`${secondHead}\``);
    expect(reply).toMatch(/\| `AC-2` .*✅ passed/);
    // The probe: the comment as the forge holds it has a live mention and a live link...
    const raw = String(github.review.reviewComments.find((item) => item.id === commentId)?.body);
    expect(raw).toContain('@someone');
    expect(raw).toContain('https://evil.example');
    // ...which the reply quotes, inert: the same words, neither a mention nor a link.
    expect(reply).toContain(`@${WORD_JOINER}someone`);
    expect(reply).toContain(`https:${WORD_JOINER}//evil.example/x`);
    expect(reply).not.toContain('@someone');
    expect(reply).not.toContain('https://evil.example');
    expect(reply).not.toContain(TOKEN);
    expect(logs()).not.toContain(TOKEN);
    expect(logs()).not.toContain(db.nodePassword);

    github.assertValid();
    console.log(`the review loop on a fleet node: ${Math.round((Date.now() - started) / 1000)} s`);
  });

  it('a review of a task the fleet never ran (a person’s `run --pr`): the node adopts it from the remote and follows up', async () => {
    const { repo, remote, github } = await configuredRepo();
    github.review.permissions.set('maya', 'write');
    const cloneUrl = remote.url('acme/app');
    const taskId = 'by-hand-5d1e';
    onTestFinished(async () => expect(await taskContainers(taskId, repo.root)).toEqual([]));

    // A person runs the task with --pr on their machine: the branch, the request, the task's state on the remote.
    models.chat.push(
      { reply: planReply(taskId, [AC1]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'slugify works.') },
    );
    models.responses.enqueue(...commitSlugTurn());
    const run = await runCliCaptured(['run', '--prd', 'PRD.md', '--task-id', taskId, '--pr'], {
      cwd: repo.root,
      env: scriptedRunEnv(models, KEY, { GH_TOKEN: TOKEN }),
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const branch = `agent-runner/${taskId}`;
    const firstHead = await remote.ref('acme/app', branch);
    expect(await remote.ref('acme/app', `refs/agent-runner/tasks/${taskId}`)).toMatch(/^[0-9a-f]{40}$/);
    expect(github.pulls.size).toBe(1);

    // The team's fleet has never heard of it; a writer's line comment reaches one of its nodes.
    const node = await startNode(github.url);
    noContainersLeft(node, () => taskId);
    const row = await rowReader();
    expect(await row(taskId)).toBeUndefined();
    github.setHead(1, { sha: firstHead as string });
    const commentId = github.review.addReviewComment(1, {
      user: 'maya',
      association: 'COLLABORATOR',
      body: '@agent-runner drop punctuation too',
      path: 'slug.js',
      line: 1,
      diffHunk: '@@ -0,0 +1 @@\n+exports.slugify = (text) => text.trim().toLowerCase();',
    });
    scriptPunctuationFollowup(taskId);
    const chatBefore = models.chat.requests.length;
    const answer = await postWebhook(
      node,
      signed(
        'pull_request_review_comment',
        lineComment({ commentId, body: '@agent-runner drop punctuation too', branch, cloneUrl }),
      ),
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    const logs = () => node.log.join('\n');
    await vi.waitFor(() => expect(github.review.repliesOn(1), logs()).toHaveLength(1), {
      timeout: 240_000,
      interval: 500,
    });
    await vi.waitFor(async () => expect((await row(taskId))?.ended_at, logs()).not.toBeNull(), {
      timeout: 60_000,
      interval: 500,
    });
    // Adopted: rebuilt from the remote's state, followed up on the same branch and request, answered once.
    expect(logs()).toContain(`task ${taskId}: adopted from`);
    expect((await row(taskId))?.state, logs()).toBe('COMPLETE');
    // The fleet's row shows the task's own PRD, read from its journal on the remote.
    expect((await row(taskId))?.prd).toBe(readFileSync(path.join(repo.root, 'PRD.md'), 'utf8'));
    expect(models.chat.requests.length - chatBefore).toBe(3);
    expect(github.review.reactions).toEqual([{ on: 'review_comment', commentId, content: 'eyes' }]);
    expect(await remote.ref('acme/app', `${branch}^`)).toBe(firstHead);
    expect(git(remote.path('acme/app'), 'show', `${branch}:slug.js`)).toBe(SLUG_PUNCTUATION_JS.trimEnd());
    expect(github.pulls.size).toBe(1);
    expect((github.pulls.get(1) as { body: string }).body).toContain('## Follow-up 1');
    const reply = String(github.review.repliesOn(1)[0]?.body);
    expect(reply).toContain('taken into follow-up 1, which ended COMPLETE');
    expect(reply).toMatch(/\| `AC-1` .*✅ passed/);
    expect(reply).toMatch(/\| `AC-2` .*✅ passed/);
    // The person's machine is as it was: its branch where their run left it.
    expect(git(repo.root, 'rev-parse', branch)).toBe(firstHead);
    expect(logs()).not.toContain(TOKEN);
    github.assertValid();
  });
});
