/**
 * Delivery's merge request on GitLab: the real `@gitbeaker/rest` client against a scripted GitLab API server
 * written from GitLab's documentation, after a real push to a real git remote over HTTP. No Docker.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deliverTask, type DeliverySettings, type ForgeFactory } from '../../src/deliver/deliver-task.js';
import { createGitLabForge } from '../../src/deliver/gitlab-forge.js';
import { Redaction } from '../../src/notes/redact.js';
import { createFinishedTask, finishAgainComplete, type FinishedTask } from '../support/finished-task.js';
import { GitHttpRemote } from '../support/git-http-remote.js';
import { ScriptedGitLabServer } from '../support/scripted-gitlab-server.js';

const TOKEN = 'glpat-gitlabDeliverToken0123456789ab';

describe('deliver: the GitLab merge request', () => {
  let remote: GitHttpRemote;
  let gitlab: ScriptedGitLabServer;
  let task: FinishedTask;
  let settings: DeliverySettings;
  const forgeFactory: ForgeFactory = (input) =>
    createGitLabForge({
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

  const deliver = () =>
    deliverTask({
      repoRoot: task.repo.root,
      taskId: task.taskId,
      settings,
      env: { GITLAB_TOKEN: TOKEN },
      redaction: new Redaction(),
      forgeFactory,
    });

  beforeEach(async () => {
    remote = await new GitHttpRemote({ user: 'oauth2', password: TOKEN }).start();
    gitlab = await new ScriptedGitLabServer().start();
    settings = {
      push: true,
      pr: true,
      when: 'complete',
      remote: 'origin',
      forge: 'gitlab',
      apiUrl: gitlab.url,
    };
  });
  afterEach(async () => {
    await gitlab.stop();
    await remote.stop();
    gitlab.assertValid();
  });

  it('opens one merge request with the evidence, then updates it (never a second)', async () => {
    await setUp();
    const first = await deliver();
    expect(first.error).toBeNull();
    expect(first.url).toBe('https://gitlab.test/acme/app/-/merge_requests/1');
    expect(gitlab.calls[0]?.path).toContain('/api/v4/projects/acme%2Fapp/merge_requests');
    expect(gitlab.calls[1]?.token).toBe(TOKEN);
    const request = gitlab.mergeRequests.get(1) as {
      title: string;
      description: string;
      target_branch: string;
    };
    expect(request.title).toBe('Add slugify');
    expect(request.target_branch).toBe('main');
    expect(request.description).toContain('## Acceptance criteria');
    expect(request.description).toContain('## Definition of Done');
    task.addCommit('Resume: more');
    const second = await deliver();
    expect(second.error).toBeNull();
    expect(gitlab.mergeRequests.size).toBe(1);
    expect(gitlab.calls.map((call) => call.operation)).toEqual(['list', 'create', 'list', 'edit']);
  });

  it('409 (an open one exists, a race): finds it and edits it', async () => {
    await setUp();
    await deliver();
    gitlab.listEmptyOnce();
    const outcome = await deliver();
    expect(outcome.error).toBeNull();
    expect(gitlab.calls.map((call) => [call.operation, call.status])).toEqual([
      ['list', 200],
      ['create', 201],
      ['list', 200],
      ['create', 409],
      ['list', 200],
      ['edit', 200],
    ]);
  });

  it("a task that is not COMPLETE is a draft (GitLab's Draft: prefix) with deliver.when: always", async () => {
    await setUp({ state: 'FAILED' });
    settings.when = 'always';
    const outcome = await deliver();
    expect(outcome.changeRequest).toEqual({ number: 1, draft: true });
    expect((gitlab.mergeRequests.get(1) as { title: string }).title).toBe('Draft: Add slugify');
    // Resumed to COMPLETE: the same merge request, its Draft: prefix gone, its description rewritten.
    finishAgainComplete(task, task.addCommit('Resume: finish slugify'));
    const ready = await deliver();
    expect(ready.changeRequest).toEqual({ number: 1, draft: false });
    expect(gitlab.mergeRequests.size).toBe(1);
    const request = gitlab.mergeRequests.get(1) as { title: string; draft: boolean };
    expect(request).toMatchObject({ title: 'Add slugify', draft: false });
  });

  it('401 and 403 are reported with the fix; the branch stays pushed', async () => {
    await setUp();
    gitlab.failNext('list', 401, '401 Unauthorized');
    const unauthorized = await deliver();
    expect(unauthorized.pushed).toBe(true);
    expect(unauthorized.error?.kind).toBe('auth');
    expect(unauthorized.error?.message).toContain('GITLAB_TOKEN');
    gitlab.failNext('create', 403, '403 Forbidden');
    const forbidden = await deliver();
    expect(forbidden.error?.kind).toBe('permission');
    expect(forbidden.error?.message).toContain('the `api` scope');
    expect(forbidden.error?.message).toContain('Developer role');
  });

  it("429 with Retry-After: 2 is retried no sooner than GitLab asked, a 503's Retry-After: 1 too; an hour's wait fails at once, saying so", async () => {
    await setUp();
    // GitLab's own timing (a second of Retry-After is a second): the adapter as delivery makes it.
    const client = createGitLabForge({ token: TOKEN, repository: 'acme/app', apiUrl: gitlab.url });
    gitlab.rateLimitNext('create', 2);
    const created = await client.create(task.branch, 'main', { title: 't', body: 'b', draft: false });
    expect(created.number).toBe(1);
    const [first, second] = gitlab.calls.filter((call) => call.operation === 'create');
    expect([first?.status, second?.status]).toEqual([429, 201]);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(2_000);
    // A 503 that names its wait (a load balancer's) is waited out as long too.
    gitlab.failNext('show', 503, '503 Service Unavailable', { 'Retry-After': '1' });
    await client.get(1);
    const shows = gitlab.calls.filter((call) => call.operation === 'show');
    expect(shows.map((call) => call.status)).toEqual([503, 200]);
    expect((shows[1]?.at ?? 0) - (shows[0]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
    // An hour: not waited, not retried; delivery says how long GitLab asked for.
    gitlab.rateLimitNext('list', 3600);
    const started = Date.now();
    const outcome = await deliver();
    // Far below the hour asked (the delivery's push and its other calls take seconds on a loaded machine).
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(outcome.pushed).toBe(true);
    expect(outcome.error?.kind).toBe('rate_limited');
    expect(outcome.error?.message).toContain('(429: Retry later)');
    expect(outcome.error?.message).toContain('asked to wait 3600 s, longer than delivery waits (120 s)');
    expect(outcome.error?.message).toContain(`agent-runner deliver ${task.taskId}`);
    expect(gitlab.calls.filter((call) => call.operation === 'list').map((call) => call.status)).toEqual([
      429,
    ]);
  }, 20_000);

  it('429 is retried; a lasting 503 is retried three times, then reported with its status and the fix', async () => {
    await setUp();
    gitlab.failNext('create', 429, 'Retry later');
    const retried = await deliver();
    expect(retried.error).toBeNull();
    expect(gitlab.calls.filter((call) => call.operation === 'create').map((call) => call.status)).toEqual([
      429, 201,
    ]);
    for (let index = 0; index < 4; index += 1) gitlab.failNext('edit', 503, '503 Service Unavailable');
    const outcome = await deliver();
    expect(outcome.error?.kind).toBe('unavailable');
    expect(outcome.error?.message).toContain('(503: 503 Service Unavailable) after retries');
    expect(outcome.error?.message).toContain('Check deliver.apiUrl');
    expect(outcome.error?.message).toContain(`agent-runner deliver ${task.taskId}`);
    expect(gitlab.calls.filter((call) => call.operation === 'edit').map((call) => call.status)).toEqual([
      503, 503, 503, 503,
    ]);
  });
});
