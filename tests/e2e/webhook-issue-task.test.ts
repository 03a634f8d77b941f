/**
 * A labelled issue becomes a task and a pull request that closes it, end to end: `serve` (in this process) on a
 * repository whose remote is served by `git http-backend`, the real Docker sandbox and the real codex binary,
 * the models scripted, GitHub's API scripted and validated against its OpenAPI description. The deliveries are
 * GitHub's published example of `issues.labeled` (@octokit/webhooks-examples) with this repository's fields,
 * signed here with node:crypto. A wrong signature is refused and a labeller without write access runs nothing
 * (no task, no model call); a writer's label queues one task that runs COMPLETE with codex, is delivered as a
 * pull request whose body closes the issue, and the issue gets one reply with the request and the outcome; the
 * same delivery again is refused (409). One task run serves every assertion.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { processRedaction, safeOutput } from '../../src/cli/output.js';
import { startServer } from '../../src/cli/serve-command.js';
import { ServeClient } from '../../src/serve/api-client.js';
import type { BoardTask, TaskPage } from '../../src/serve/board-view.js';
import { commitSlugTurn, scriptedRunEnv } from '../support/demo-task.js';
import { AC1 } from '../support/followup-criteria.js';
import { nodeRepoOnGitHub } from '../support/github-repo.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { taskContainers } from '../support/task-containers.js';
import { git } from '../support/task-repo.js';
import { labelledIssue } from '../support/webhook-examples.js';

const models = scriptedModelServers();
const KEY = 'e2e-webhook-key-3f1a';
const TOKEN = 'ghp_e2eWebhookToken0123456789abcdefABCDEF';
const SECRET = 'e2e-webhook-secret-of-the-team-9d4c';
const ISSUE = 7;
const ISSUE_BODY = 'Add `slugify(text)` in slug.js: lower-case, words joined by "-". With a test.';

/** GitHub's published `issues.labeled` example, as this repository's issue labelled by `sender`. */
function labelled(sender: string, origin: string): string {
  return JSON.stringify(
    labelledIssue({
      number: ISSUE,
      title: 'Add a slugify helper',
      body: ISSUE_BODY,
      cloneUrl: origin,
      sender,
    }),
  );
}

function signed(body: string, secret: string, delivery: string = randomUUID()): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-github-event': 'issues',
    'x-github-delivery': delivery,
    'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
  };
}

describe('a labelled issue through the webhook (end to end)', () => {
  it('refuses a bad signature and a non-writer, runs a writer’s issue with codex to a pull request that closes it', async () => {
    const { repo, remote, github } = await nodeRepoOnGitHub(TOKEN, (root, server) => {
      writeFileSync(
        path.join(root, 'agent-runner.yaml'),
        `deliver:\n  forge: github\n  apiUrl: ${server.url}\n`,
      );
      git(root, 'add', 'agent-runner.yaml');
      git(root, 'commit', '-q', '-m', 'agent-runner configuration');
    });
    github.review.permissions.set('maya', 'write');

    const env = scriptedRunEnv(models, KEY, { GH_TOKEN: TOKEN, AGENT_RUNNER_WEBHOOK_SECRET: SECRET });
    const redaction = processRedaction(env);
    const errors: string[] = [];
    const server = await startServer(
      { port: '0' },
      {
        output: safeOutput(
          { out: () => undefined, err: (line) => void errors.push(line), isTTY: false },
          redaction,
        ),
        redaction,
        env,
        cwd: repo.root,
        setExitCode: () => undefined,
      },
    );
    let taskId = '';
    onTestFinished(async () => {
      await server.close();
      if (taskId) expect(await taskContainers(taskId, repo.root)).toEqual([]);
    });
    const client = new ServeClient(server.info.url, server.info.token);
    const post = async (body: string, headers: Record<string, string>) => {
      const response = await fetch(`${server.info.url}/api/webhooks/github`, {
        method: 'POST',
        headers,
        body,
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const tasks = () => client.request<{ tasks: BoardTask[] }>('GET', '/api/tasks');

    // Signed with another secret: refused before anything is read, nothing queued.
    const writer = labelled('maya', remote.url('acme/app'));
    const forged = await post(writer, signed(writer, `${SECRET}-not`));
    expect(forged).toMatchObject({ status: 401, body: { error: { code: 'signature_invalid' } } });
    // Labelled by someone without write access: answered, audited, nothing runs.
    const stranger = labelled('mallory', remote.url('acme/app'));
    const refused = await post(stranger, signed(stranger, SECRET));
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ action: 'ignore', refused: true });
    expect(String(refused.body.reason)).toContain('mallory has no write access');
    expect((await tasks()).tasks).toEqual([]);
    expect(models.chat.requests).toHaveLength(0);

    // A writer's label: one task, queued at once; the same delivery again is refused.
    models.responses.enqueue(...commitSlugTurn());
    const delivery = randomUUID();
    const accepted = await post(writer, signed(writer, SECRET, delivery));
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    taskId = String(accepted.body.taskId);
    // The plan names the task's id, known from the answer: the task prepares its sandbox before it plans.
    models.chat.push(
      { reply: planReply(taskId, [AC1]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'slugify works.') },
    );
    const origin = `${github.url}/acme/app/issues/${ISSUE}`;
    expect(accepted.body).toMatchObject({ action: 'task', origin });
    expect(taskId).toMatch(/^issue-7-[0-9a-f]{6}$/);
    const again = await post(writer, signed(writer, SECRET, delivery));
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'duplicate_delivery' } } });

    // The task runs COMPLETE with codex; its delivery (after the run) replies on the issue.
    await vi.waitFor(() => expect(github.review.repliesOn(ISSUE)).toHaveLength(1), {
      timeout: 240_000,
      interval: 500,
    });
    const page = await client.request<TaskPage>('GET', `/api/tasks/${taskId}`);
    expect(page.state, errors.join('\n')).toBe('COMPLETE');
    expect(page.summary?.criteria.map((criterion) => [criterion.id, criterion.status])).toEqual([
      ['AC-1', 'passed'],
    ]);
    expect(models.responses.responseRequests().length).toBeGreaterThan(0);
    // The Meta-agent got the issue as the forge user's quoted words.
    const prompt = JSON.stringify(models.chat.requests[0]?.body);
    expect(prompt).toContain('written by a user of the forge');
    expect(prompt).toContain(ISSUE_BODY.replaceAll('"', '\\"'));
    // Where it came from, on its page: the webhook's audit entry with the issue's link, built from numbers.
    expect(page.audit).toEqual([
      expect.objectContaining({
        action: 'webhook.task',
        actor: { name: 'github:maya', role: 'operator' },
        origin,
      }),
    ]);

    // The pull request: the task's branch as pushed, its body closing the issue.
    expect(github.pulls.size).toBe(1);
    const pull = github.pulls.get(1) as { body: string; html_url: string; head: { ref: string } };
    expect(pull.head.ref).toBe(`agent-runner/${taskId}`);
    expect(pull.body.trimEnd().endsWith(`Closes #${ISSUE}`)).toBe(true);
    expect(await remote.ref('acme/app', `agent-runner/${taskId}`)).toBe(page.summary?.headSha);
    // The issue's one reply: the outcome and the request's page.
    const [reply] = github.review.repliesOn(ISSUE);
    expect(reply?.body).toBe(
      `agent-runner worked on this issue: the task ended **COMPLETE**; its request (ready for review): ${pull.html_url}`,
    );

    // Everything the deliveries asked for: this one task, and nothing more ran.
    expect((await tasks()).tasks.map((task) => task.taskId)).toEqual([taskId]);
    expect(models.chat.requests).toHaveLength(3);
    github.assertValid();
  });
});
