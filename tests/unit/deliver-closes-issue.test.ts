/**
 * A task from an issue, delivered (`deliver.closes`, `run --closes N`): the pull request's body closes the issue
 * (`Closes #N`, a line of ours) and the issue gets one reply with the outcome and the request's page, through the
 * real `@octokit/rest` client against the scripted GitHub server (every request and response checked against
 * GitHub's OpenAPI description), after a real push to a real git remote over HTTP. No Docker.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { deliverTask, type DeliverySettings } from '../../src/deliver/deliver-task.js';
import { createGitHubForge } from '../../src/deliver/github-forge.js';
import { Redaction } from '../../src/notes/redact.js';
import { createFinishedTask, type FinishedTask } from '../support/finished-task.js';
import { GitHttpRemote } from '../support/git-http-remote.js';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';

const TOKEN = 'ghp_githubClosesToken0123456789abcdefABCD';
let remote: GitHttpRemote;
let github: ScriptedGitHubServer;
let task: FinishedTask;

beforeEach(async () => {
  remote = await new GitHttpRemote({ user: 'x-access-token', password: TOKEN }).start();
  github = await new ScriptedGitHubServer().start();
  task = await createFinishedTask({});
  await remote.createFrom('acme/app', task.repo.root);
  task.repo.git('remote', 'add', 'origin', remote.url('acme/app'));
}, 60_000);

afterEach(async () => {
  await github.stop();
  await remote.stop();
});

const deliver = (settings: Partial<DeliverySettings>) =>
  deliverTask({
    repoRoot: task.repo.root,
    taskId: task.taskId,
    settings: {
      push: true,
      pr: true,
      when: 'complete',
      remote: 'origin',
      forge: 'github',
      apiUrl: github.url,
      ...settings,
    },
    env: { GH_TOKEN: TOKEN },
    redaction: new Redaction(),
    forgeFactory: (input) =>
      createGitHubForge({ token: input.token, repository: input.repository, apiUrl: input.apiUrl ?? '' }),
  });

it('the request closes the issue and the issue gets one reply with the outcome and the request', async () => {
  const outcome = await deliver({ closes: 7 });
  expect(outcome.error).toBeNull();
  const pull = github.pulls.get(1) as { body: string };
  expect(pull.body.trimEnd().endsWith('Closes #7')).toBe(true);
  expect(github.calls.map((call) => call.operation)).toEqual(['list', 'create', 'createIssueComment']);
  expect(github.calls[2]?.path).toBe('/repos/acme/app/issues/7/comments');
  const replies = github.review.repliesOn(7);
  expect(replies).toHaveLength(1);
  expect(replies[0]?.body).toBe(
    'agent-runner worked on this issue: the task ended **COMPLETE**; its request (ready for review): https://github.test/acme/app/pull/1',
  );
  github.assertValid();
});

it('without deliver.closes: no Closes line, no comment', async () => {
  await deliver({});
  expect((github.pulls.get(1) as { body: string }).body).not.toContain('Closes #');
  expect(github.calls.map((call) => call.operation)).toEqual(['list', 'create']);
  github.assertValid();
});
