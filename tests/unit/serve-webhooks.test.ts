/**
 * `serve`'s webhook door on a real socket (the server's own HTTP stack over a real repository's board): GitHub's
 * published example payloads and GitLab's documented ones, signed here with node:crypto (not with the library
 * the server verifies with), sent as the forges send them. Who may write is asked of the scripted GitHub server
 * (validated against GitHub's OpenAPI description). The queue is the server's port for it, recorded here: the
 * fleet's real queue is tests/integration/fleet-webhooks.test.ts.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { webhookOptions } from '../../src/cli/serve-webhooks.js';
import { validateConfig } from '../../src/config/load.js';
import { Redaction } from '../../src/notes/redact.js';
import { FileDeliveryStore } from '../../src/forge-events/delivery-store.js';
import { githubAccess, type ForgeAccess } from '../../src/forge-events/dispatch.js';
import type { WebhookFollowup, WebhookTask } from '../../src/forge-events/webhook-routes.js';
import { createDemoRepo } from '../support/demo-task.js';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';
import { startTokenServer, type TokenServer } from '../support/token-server.js';
import { issueNote, mergeRequestNote } from '../fixtures/gitlab-webhooks/note-hooks.js';
import { example } from '../support/webhook-examples.js';

const SECRET = 'a-webhook-secret-of-the-team-0123';
let repo: { dir: string; remove: () => void };
let server: TokenServer;
let github: ScriptedGitHubServer;
const queued: WebhookTask[] = [];
const followups: WebhookFollowup[] = [];
const gitlabWriters = new Set(['root']);

beforeAll(async () => {
  repo = createDemoRepo('');
  github = await new ScriptedGitHubServer().start();
  github.review.permissions.set('Codertocat', 'write');
  const gitlab: ForgeAccess = {
    canWrite: async (user) => gitlabWriters.has(user),
    headBranch: async () => undefined,
  };
  server = await startTokenServer(repo.dir, {
    extra: {
      webhooks: {
        secret: SECRET,
        settings: {},
        deliveries: new FileDeliveryStore(path.join(repo.dir, '.agent-runner')),
        access: (event) =>
          event.forge === 'github'
            ? githubAccess({ api: github.url, repository: event.repository.fullName, token: 'ghs_server' })
            : gitlab,
        apiUrl: undefined,
        queueTask: async (task) => {
          queued.push(task);
          return `from-issue-${queued.length}`;
        },
        startFollowup: async (followup) => void followups.push(followup),
      },
    },
  });
});

afterAll(async () => {
  await server?.close();
  await github?.stop();
  repo?.remove();
});

async function deliver(
  route: 'github' | 'gitlab',
  payload: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/api/webhooks/${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function githubHeaders(event: string, body: string, secret = SECRET, delivery: string = randomUUID()) {
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  return { 'x-github-event': event, 'x-github-delivery': delivery, 'x-hub-signature-256': signature };
}

function labelled(): string {
  const payload = example('issues', 'labeled');
  payload.label.name = 'agent-runner';
  payload.issue.title = 'Add a slugify helper';
  payload.issue.body = 'Write `slugify(text)`.';
  return JSON.stringify(payload);
}

describe('POST /api/webhooks/github', () => {
  it('a labelled issue by a writer: one task queued, its origin a link built from numbers, audited', async () => {
    const before = queued.length;
    const body = labelled();
    const answer = await deliver('github', body, githubHeaders('issues', body));
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(answer.body).toMatchObject({
      action: 'task',
      taskId: `from-issue-${before + 1}`,
      origin: 'https://github.com/Codertocat/Hello-World/issues/1',
    });
    expect(queued).toHaveLength(before + 1);
    expect(queued.at(-1)).toMatchObject({
      repo: 'https://github.com/Codertocat/Hello-World.git',
      origin: { forge: 'github', repository: 'Codertocat/Hello-World', issue: 1 },
    });
    expect(queued.at(-1)?.prd).toContain('Write `slugify(text)`.');
    const audit = await server.audit.list();
    expect(audit.at(-1)).toMatchObject({
      actor: { name: 'github:Codertocat', role: 'operator' },
      action: 'webhook.task',
      taskId: `from-issue-${before + 1}`,
      status: 202,
      origin: 'https://github.com/Codertocat/Hello-World/issues/1',
    });
    github.assertValid();
  });

  it('the same delivery twice: one task, the second 409; remembered in the state directory', async () => {
    const before = queued.length;
    const body = labelled();
    const headers = githubHeaders('issues', body);
    expect((await deliver('github', body, headers)).status).toBe(202);
    const again = await deliver('github', body, headers);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: { code: 'duplicate_delivery' } });
    expect(queued).toHaveLength(before + 1);
    const remembered = await readdir(path.join(repo.dir, '.agent-runner', 'webhook-deliveries'));
    expect(remembered).toContain(`github-${headers['x-github-delivery']}`);
  });

  it('no signature, a wrong secret, a body changed after signing: 401, nothing queued, the secret in no answer', async () => {
    const before = queued.length;
    const body = labelled();
    const { 'x-hub-signature-256': _signature, ...unsigned } = githubHeaders('issues', body);
    const answers = [
      await deliver('github', body, unsigned),
      await deliver('github', body, githubHeaders('issues', body, 'another-secret-entirely-000000')),
      await deliver('github', body.replace('slugify', 'rm -rf'), githubHeaders('issues', body)),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([401, 401, 401]);
    expect(answers.map((answer) => (answer.body.error as { code: string }).code)).toEqual([
      'signature_missing',
      'signature_invalid',
      'signature_invalid',
    ]);
    expect(queued).toHaveLength(before);
    for (const answer of answers) expect(JSON.stringify(answer.body)).not.toContain(SECRET);
    // The probe sees the log: the earlier delivery's actor is in it, the secret is not.
    const log = await readFile(path.join(repo.dir, '.agent-runner', 'audit.jsonl'), 'utf8');
    expect(log).toContain('github:Codertocat');
    expect(log).not.toContain(SECRET);
  });

  it('an event agent-runner does not act on: 400, nothing queued; a ping: 200', async () => {
    const before = queued.length;
    const push = JSON.stringify(example('ping'));
    const answer = await deliver('github', push, githubHeaders('star', push));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: 'unknown_event' } });
    expect((await deliver('github', push, githubHeaders('ping', push))).status).toBe(200);
    expect(queued).toHaveLength(before);
  });

  it('a labeller without write access: 200 ignore saying why, nothing queued, audited', async () => {
    const before = queued.length;
    const payload = JSON.parse(labelled());
    payload.sender.login = 'drive-by';
    const body = JSON.stringify(payload);
    const answer = await deliver('github', body, githubHeaders('issues', body));
    expect(answer).toMatchObject({
      status: 200,
      body: {
        action: 'ignore',
        refused: true,
        reason: expect.stringContaining('drive-by has no write access'),
      },
    });
    expect(queued).toHaveLength(before);
    expect((await server.audit.list()).at(-1)).toMatchObject({
      actor: { name: 'github:drive-by' },
      action: 'webhook.ignore',
    });
  });

  it('a review of agent-runner/<ID>: the follow-up of its task starts once (202), the same delivery again is 409', async () => {
    const review = example('pull_request_review', 'submitted');
    review.pull_request.head.ref = 'agent-runner/add-slugify';
    review.review.state = 'changes_requested';
    const body = JSON.stringify(review);
    const before = followups.length;
    const delivery = randomUUID();
    const answer = await deliver(
      'github',
      body,
      githubHeaders('pull_request_review', body, SECRET, delivery),
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(answer.body).toEqual({
      action: 'followup',
      taskId: 'add-slugify',
      request: 'https://github.com/Codertocat/Hello-World/pull/2',
    });
    const again = await deliver('github', body, githubHeaders('pull_request_review', body, SECRET, delivery));
    expect(again.status).toBe(409);
    expect(followups.slice(before)).toEqual([
      {
        taskId: 'add-slugify',
        requestUrl: 'https://github.com/Codertocat/Hello-World/pull/2',
        repo: review.repository.clone_url,
      },
    ]);
    expect((await server.audit.list()).at(-1)).toMatchObject({
      actor: { name: 'github:Codertocat' },
      action: 'webhook.followup',
      taskId: 'add-slugify',
      // The review itself: the request's page at the review's anchor.
      origin: `https://github.com/Codertocat/Hello-World/pull/2#pullrequestreview-${review.review.id}`,
    });
  });
});

describe('the follow-up a review starts on a server of one repository', () => {
  it('is `agent-runner followup --from-review <request>` run as a process of its own, which reads the request', async () => {
    // The built CLI (dist/, as `serve` itself is; scripts/setup.sh builds it) reads the request through the
    // forge with the host's token: the scripted GitHub server sees that read. No such request there: the
    // command says so in its log and ends; nothing runs.
    const own = createDemoRepo(`deliver:\n  apiUrl: ${github.url}\n`);
    try {
      const config = validateConfig([
        { source: 'test', values: { forge: { webhookSecret: SECRET }, deliver: { apiUrl: github.url } } },
      ]);
      const env = { PATH: process.env.PATH, HOME: process.env.HOME, GH_TOKEN: 'ghs_followup_probe' };
      const options = await webhookOptions(
        config,
        own.dir,
        { env, redaction: new Redaction() },
        { start: async () => Promise.reject(new Error('no task is started here')) },
        null,
      );
      await options?.startFollowup?.({
        taskId: 'add-slugify',
        requestUrl: 'https://github.com/Codertocat/Hello-World/pull/2',
        repo: 'https://github.com/Codertocat/Hello-World.git',
      });
      await vi.waitFor(
        () =>
          expect(
            github.calls.some(
              (call) =>
                call.method === 'GET' &&
                call.path === '/repos/Codertocat/Hello-World/pulls/2' &&
                call.authorization?.includes('ghs_followup_probe') === true,
            ),
          ).toBe(true),
        { timeout: 60_000, interval: 200 },
      );
      const log = path.join(own.dir, '.agent-runner', 'webhook-followups.log');
      await vi.waitFor(async () => expect(await readFile(log, 'utf8')).toContain('agent-runner:'), {
        timeout: 30_000,
        interval: 200,
      });
      expect(await readFile(log, 'utf8')).not.toContain('ghs_followup_probe');
    } finally {
      own.remove();
    }
  }, 120_000);
});

describe('POST /api/webhooks/gitlab', () => {
  const headers = (token: string, uuid: string = randomUUID()) => ({
    'x-gitlab-event': 'Note Hook',
    'x-gitlab-token': token,
    'x-gitlab-event-uuid': uuid,
  });

  it("GitLab's documented issue comment naming the trigger: a task; without it: ignored; a wrong token: 401", async () => {
    const before = queued.length;
    const quiet = await deliver('gitlab', issueNote, headers(SECRET));
    expect(quiet).toMatchObject({ status: 200, body: { action: 'ignore' } });
    const asked = structuredClone(issueNote);
    asked.object_attributes.note = '@agent-runner please do this';
    const uuid = randomUUID();
    const answer = await deliver('gitlab', asked, headers(SECRET, uuid));
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(answer.body.origin).toBe('https://gitlab.com/gitlab-org/gitlab-test/-/issues/17#note_1241');
    expect(queued.at(-1)).toMatchObject({ repo: 'http://example.com/gitlab-org/gitlab-test.git' });
    expect((await deliver('gitlab', asked, headers(SECRET, uuid))).status).toBe(409);
    expect((await deliver('gitlab', asked, headers(`${SECRET}x`))).status).toBe(401);
    expect(queued).toHaveLength(before + 1);
  });

  it("a comment on a merge request that isn't agent-runner's: ignored; on agent-runner/<ID>: a follow-up", async () => {
    const note = structuredClone(mergeRequestNote);
    note.object_attributes.note = '@agent-runner rename it';
    expect(await deliver('gitlab', note, headers(SECRET))).toMatchObject({
      status: 200,
      body: { action: 'ignore', reason: expect.stringContaining('not one agent-runner opened') },
    });
    note.merge_request.source_branch = 'agent-runner/add-slugify';
    const answer = await deliver('gitlab', note, headers(SECRET));
    expect(answer.status).toBe(202);
    expect(followups.at(-1)).toEqual({
      taskId: 'add-slugify',
      requestUrl: 'https://gitlab.com/gitlab-org/gitlab-test/-/merge_requests/1',
      repo: note.project.git_http_url,
    });
  });
});
