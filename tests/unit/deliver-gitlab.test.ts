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
      retryDelayMs: 5,
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

  it('429 is retried; a lasting 503 is retried, then reported', async () => {
    await setUp();
    gitlab.failNext('create', 429, 'Retry later');
    const retried = await deliver();
    expect(retried.error).toBeNull();
    expect(gitlab.calls.filter((call) => call.operation === 'create').map((call) => call.status)).toEqual([
      429, 201,
    ]);
    for (let index = 0; index < 3; index += 1) gitlab.failNext('edit', 503, '503 Service Unavailable');
    const outcome = await deliver();
    expect(outcome.error?.kind).toBe('unavailable');
    expect(gitlab.calls.filter((call) => call.operation === 'edit')).toHaveLength(3);
  });
});
