/**
 * Delivery's pull request on GitHub: the real `@octokit/rest` client (retry and throttling plugins) against a
 * scripted GitHub REST server whose every request and response is checked against GitHub's OpenAPI
 * description, after a real push to a real git remote over HTTP. No Docker.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deliverTask, type DeliverySettings, type ForgeFactory } from '../../src/deliver/deliver-task.js';
import { createGitHubForge } from '../../src/deliver/github-forge.js';
import { Redaction } from '../../src/notes/redact.js';
import { createFinishedTask, finishAgainComplete, type FinishedTask } from '../support/finished-task.js';
import { GitHttpRemote } from '../support/git-http-remote.js';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';

const TOKEN = 'ghp_githubDeliverToken0123456789abcdefABCD';

describe('deliver: the GitHub pull request', () => {
  let remote: GitHttpRemote;
  let github: ScriptedGitHubServer;
  let task: FinishedTask;
  let settings: DeliverySettings;
  // The real adapter, with GitHub's waits shortened (a second of retry-after is 5 ms here).
  const forgeFactory: ForgeFactory = (input) =>
    createGitHubForge({
      token: input.token,
      repository: input.repository,
      ...(input.apiUrl ? { apiUrl: input.apiUrl } : {}),
      retryAfterBaseValue: 5,
    });

  async function setUp(options: Parameters<typeof createFinishedTask>[0] = {}) {
    task = await createFinishedTask(options);
    await remote.createFrom('acme/app', task.repo.root);
    task.repo.git('remote', 'add', 'origin', remote.url('acme/app'));
  }

  const deliver = (env: NodeJS.ProcessEnv = { GH_TOKEN: TOKEN }) =>
    deliverTask({
      repoRoot: task.repo.root,
      taskId: task.taskId,
      settings,
      env,
      redaction: new Redaction(),
      forgeFactory,
    });

  beforeEach(async () => {
    remote = await new GitHttpRemote({ user: 'x-access-token', password: TOKEN }).start();
    github = await new ScriptedGitHubServer().start();
    settings = {
      push: true,
      pr: true,
      when: 'complete',
      remote: 'origin',
      forge: 'github',
      apiUrl: github.url,
    };
  }, 60_000);
  afterEach(async () => {
    await github.stop();
    await remote.stop();
    github.assertValid();
  });

  it('opens one ready pull request whose body is the evidence', async () => {
    await setUp();
    const outcome = await deliver();
    expect(outcome.error).toBeNull();
    expect(outcome).toMatchObject({ pushed: true, url: 'https://github.test/acme/app/pull/1' });
    expect(github.calls.map((call) => call.operation)).toEqual(['list', 'create']);
    expect(github.calls[0]?.path).toContain(`head=acme%3Aagent-runner%2F${task.taskId}`);
    expect(github.calls[1]?.authorization).toBe(`token ${TOKEN}`);
    const pull = github.pulls.get(1) as {
      title: string;
      body: string;
      draft: boolean;
      base: { ref: string };
    };
    expect(pull.title).toBe('Add slugify');
    expect(pull.draft).toBe(false);
    expect(pull.base.ref).toBe('main');
    expect(pull.body).toContain('| `AC1` (critical) | slugify lowercases its input |');
    expect(pull.body).toContain('| test | `npm test` | ✅ passed (exit 0; 4 passed) |');
    expect(pull.body).toContain('baseline on');
    expect(pull.body).toContain('| 1 | codex | `gpt-5.5-mini` | exec | 0 |');
    expect(pull.body).toContain(`agent-runner verify agent-runner/${task.taskId}`);
    expect(await remote.ref('acme/app', task.branch)).toBe(task.head);
  });

  it('a second delivery (after a resume) updates the same pull request, never opens a second', async () => {
    await setUp();
    await deliver();
    task.addCommit('Resume: more');
    const outcome = await deliver();
    expect(outcome.error).toBeNull();
    expect(outcome.url).toBe('https://github.test/acme/app/pull/1');
    expect(github.pulls.size).toBe(1);
    expect(github.calls.map((call) => call.operation)).toEqual(['list', 'create', 'list', 'update']);
  });

  it('422 "already exists" (a race): finds the pull request and updates it', async () => {
    await setUp();
    await deliver();
    github.listEmptyOnce();
    const outcome = await deliver();
    expect(outcome.error).toBeNull();
    expect(github.calls.map((call) => [call.operation, call.status])).toEqual([
      ['list', 200],
      ['create', 201],
      ['list', 200],
      ['create', 422],
      ['list', 200],
      ['update', 200],
    ]);
    expect(github.pulls.size).toBe(1);
  });

  it('a task that is not COMPLETE opens a draft with deliver.when: always, and none with complete', async () => {
    await setUp({ state: 'NEEDS_REVIEW' });
    const skipped = await deliver();
    expect(skipped.skipped).toContain('deliver.when is complete');
    expect(github.calls).toHaveLength(0);
    settings.when = 'always';
    const outcome = await deliver();
    expect(outcome.changeRequest).toEqual({ number: 1, draft: true });
    expect((github.pulls.get(1) as { draft: boolean }).draft).toBe(true);
  });

  it('a draft becomes ready for review (GraphQL) when the resumed task is COMPLETE: one pull request, its body rewritten', async () => {
    await setUp({ state: 'NEEDS_REVIEW' });
    settings.when = 'always';
    const draft = await deliver();
    expect(draft.changeRequest).toEqual({ number: 1, draft: true });
    const before = (github.pulls.get(1) as { body: string }).body;
    const head = task.addCommit('Resume: finish slugify');
    finishAgainComplete(task, head);
    const ready = await deliver();
    expect(ready.error).toBeNull();
    expect(ready).toMatchObject({ sha: head, changeRequest: { number: 1, draft: false } });
    expect(await remote.ref('acme/app', task.branch)).toBe(head);
    expect(github.pulls.size).toBe(1);
    const pull = github.pulls.get(1) as { draft: boolean; body: string; node_id: string };
    expect(pull.draft).toBe(false);
    expect(pull.body).not.toBe(before);
    expect(pull.body).toContain(head.slice(0, 12));
    expect(github.calls.map((call) => call.operation)).toEqual([
      'list',
      'create',
      'list',
      'update',
      'graphql',
    ]);
    const mutation = github.calls.at(-1)?.body as { query: string; variables: Record<string, unknown> };
    expect(mutation.query).toContain('markPullRequestReadyForReview');
    expect(mutation.variables).toEqual({ id: pull.node_id });
    // Delivered again, nothing to change: no mutation.
    await deliver();
    expect(github.calls.at(-1)?.operation).toBe('update');
  });

  it('the ready mutation refused (GraphQL FORBIDDEN): reported as a permission, the body updated, still a draft', async () => {
    await setUp({ state: 'NEEDS_REVIEW' });
    settings.when = 'always';
    await deliver();
    finishAgainComplete(task, task.addCommit('Resume: finish slugify'));
    github.failGraphql('FORBIDDEN', 'Resource not accessible by integration');
    const outcome = await deliver();
    expect(outcome.pushed).toBe(true);
    expect(outcome.error?.kind).toBe('permission');
    expect(outcome.error?.message).toContain('Resource not accessible by integration');
    expect((github.pulls.get(1) as { draft: boolean }).draft).toBe(true);
  });

  it("the scripted GraphQL endpoint answers an unknown pull request id with GitHub's NOT_FOUND error", async () => {
    const response = await fetch(`${github.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `token ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        query:
          'mutation ($id: ID!) { markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { isDraft } } }',
        variables: { id: 'PR_nothing' },
      }),
    });
    const answer = (await response.json()) as { data: unknown; errors: { type: string; message: string }[] };
    expect(response.status).toBe(200);
    expect(answer.data).toEqual({ markPullRequestReadyForReview: null });
    expect(answer.errors[0]).toMatchObject({ type: 'NOT_FOUND' });
  });

  it('401: the token is wrong; the branch stays pushed and the message names the variables', async () => {
    await setUp();
    github.failNext('list', 401, { message: 'Bad credentials' });
    const outcome = await deliver();
    expect(outcome.pushed).toBe(true);
    expect(outcome.error?.kind).toBe('auth');
    expect(outcome.error?.message).toContain('Bad credentials');
    expect(outcome.error?.message).toContain('GH_TOKEN or GITHUB_TOKEN');
  });

  it('403: the message names the permission for fine-grained and classic tokens', async () => {
    await setUp();
    github.failNext('create', 403, {
      message: 'Resource not accessible by personal access token',
      headers: { 'x-accepted-github-permissions': 'pull_requests=write' },
    });
    const outcome = await deliver();
    expect(outcome.error?.kind).toBe('permission');
    expect(outcome.error?.message).toContain('"Pull requests: write"');
    expect(outcome.error?.message).toContain('pull_requests=write');
    expect(outcome.error?.message).toContain('`repo` scope');
  });

  it('429 with retry-after (a secondary rate limit) is waited out and retried', async () => {
    await setUp();
    github.failNext('create', 429, {
      message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
      headers: { 'retry-after': '1' },
    });
    const outcome = await deliver();
    expect(outcome.error).toBeNull();
    expect(github.calls.map((call) => [call.operation, call.status])).toEqual([
      ['list', 200],
      ['create', 429],
      ['create', 201],
    ]);
  });

  it("429 with retry-after: 2 is retried no sooner than GitHub asked; an hour's wait fails at once, saying so", async () => {
    await setUp();
    // GitHub's own timing (a second of retry-after is a second): the adapter as delivery makes it.
    const client = createGitHubForge({ token: TOKEN, repository: 'acme/app', apiUrl: github.url });
    github.failNext('create', 429, { message: 'Too Many Requests', headers: { 'retry-after': '2' } });
    const created = await client.create(task.branch, 'main', { title: 't', body: 'b', draft: false });
    expect(created.number).toBe(1);
    const [first, second] = github.calls.filter((call) => call.operation === 'create');
    expect([first?.status, second?.status]).toEqual([429, 201]);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(2_000);
    // A 503 that names its wait is waited out as long too.
    github.failNext('get', 503, { message: 'Service Unavailable', headers: { 'retry-after': '1' } });
    await client.get(1);
    const gets = github.calls.filter((call) => call.operation === 'get');
    expect(gets.map((call) => call.status)).toEqual([503, 200]);
    expect((gets[1]?.at ?? 0) - (gets[0]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
    // An hour: not waited, not retried; delivery says how long GitHub asked for.
    github.failNext('list', 429, { message: 'Too Many Requests', headers: { 'retry-after': '3600' } });
    const started = Date.now();
    const outcome = await deliver();
    // Far below the hour asked (the delivery's push and its other calls take seconds on a loaded machine).
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome.error?.kind).toBe('rate_limited');
    expect(outcome.error?.message).toContain('asked to wait 3600 s');
    expect(github.calls.filter((call) => call.status === 429)).toHaveLength(2);
  });

  it('5xx is retried; when it lasts, delivery is reported failed with the fix', async () => {
    await setUp();
    github.failNext('list', 502);
    const retried = await deliver();
    expect(retried.error).toBeNull();
    expect(github.calls.slice(0, 2).map((call) => call.status)).toEqual([502, 200]);
    for (let index = 0; index < 4; index += 1)
      github.failNext('update', 503, { message: 'Service Unavailable' });
    const outcome = await deliver();
    expect(outcome.error?.kind).toBe('unavailable');
    expect(outcome.error?.message).toContain('after retries');
    expect(github.calls.filter((call) => call.operation === 'update')).toHaveLength(4);
  });

  it('the token never reaches the body or the title (the probe sees it where it was sent)', async () => {
    await setUp({ title: `Add slugify ${TOKEN}` });
    await deliver();
    // The probe can see the token: it went to GitHub in the Authorization header.
    expect(github.calls.some((call) => call.authorization?.includes(TOKEN))).toBe(true);
    const pull = github.pulls.get(1) as { title: string; body: string };
    expect(`${pull.title}\n${pull.body}`).not.toContain(TOKEN);
    expect(pull.title).toBe('Add slugify [REDACTED]');
  });
});
