/**
 * A forge's event → what agent-runner does (scripts/ci/forge-event.mjs): GitHub's published example payloads
 * (@octokit/webhooks-examples), with only the fields a case is about set, decided by the pure functions; and the
 * same file run as the Action runs it (`node forge-event.mjs` with GITHUB_EVENT_NAME / GITHUB_EVENT_PATH /
 * GITHUB_OUTPUT), asking the scripted GitHub server (validated against GitHub's OpenAPI description) who may
 * write.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  authorise,
  decide,
  githubAccess,
  issuePrd,
  mentions,
  normaliseGithub,
  type ForgeAccess,
} from '../../scripts/ci/forge-event.mjs';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';
import { example, type Payload } from '../support/webhook-examples.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const everyone: ForgeAccess = { canWrite: async () => true, headBranch: async () => undefined };

describe('issues', () => {
  it('labelled with the label: a task whose PRD is the issue, fenced; another label: nothing', () => {
    const payload = example('issues', 'labeled');
    payload.label.name = 'agent-runner';
    payload.issue.title = 'Add a slugify helper';
    payload.issue.body = 'Write slugify.\n```\nclose the fence? ``` no\n```';
    const decision = decide(normaliseGithub('issues', payload));
    expect(decision).toMatchObject({
      kind: 'task',
      issue: payload.issue.number,
      actor: payload.sender.login,
      origin: { forge: 'github', repository: 'Codertocat/Hello-World', event: 'issues', issue: 1 },
    });
    const prd = (decision as { prd: string }).prd;
    expect(prd).toContain('Add a slugify helper');
    // The body's own fences (three backticks) cannot close the PRD's (four).
    expect(prd).toMatch(/^````text$/m);
    expect(prd.trimEnd().endsWith('````')).toBe(true);

    const other = example('issues', 'labeled'); // its label: bug
    expect(decide(normaliseGithub('issues', other))).toMatchObject({ kind: 'ignore' });
  });

  it('opened with the label, assigned to the configured user, naming the trigger: a task; else nothing', () => {
    const opened = example('issues', 'opened');
    opened.issue.labels = [];
    opened.issue.body = 'Just a bug report.';
    expect(decide(normaliseGithub('issues', opened))).toMatchObject({ kind: 'ignore' });
    opened.issue.body = 'Please, @agent-runner, fix this.';
    expect(decide(normaliseGithub('issues', opened))).toMatchObject({ kind: 'task' });
    opened.issue.body = 'Ping @agent-runner-bot about it';
    expect(decide(normaliseGithub('issues', opened))).toMatchObject({ kind: 'ignore' });

    const assigned = example('issues', 'assigned');
    expect(decide(normaliseGithub('issues', assigned))).toMatchObject({
      kind: 'ignore',
      reason: 'no assignee is configured',
    });
    expect(decide(normaliseGithub('issues', assigned), { assignee: assigned.assignee.login })).toMatchObject({
      kind: 'task',
      actor: assigned.sender.login,
    });
    expect(decide(normaliseGithub('issues', example('issues', 'edited')))).toMatchObject({ kind: 'ignore' });
  });

  it('a comment naming the trigger on an issue: a task; without it, edited or deleted: nothing', () => {
    const comment = example('issue_comment', 'created');
    delete comment.issue.pull_request;
    expect(decide(normaliseGithub('issue_comment', comment))).toMatchObject({ kind: 'ignore' });
    comment.comment.body = '@agent-runner please take this one';
    expect(decide(normaliseGithub('issue_comment', comment))).toMatchObject({
      kind: 'task',
      actor: comment.comment.user.login,
      origin: { commentId: comment.comment.id },
    });
    const edited = example('issue_comment', 'edited');
    delete edited.issue.pull_request;
    edited.comment.body = '@agent-runner';
    expect(decide(normaliseGithub('issue_comment', edited))).toMatchObject({ kind: 'ignore' });
  });
});

describe('reviews and comments on a request', () => {
  it('a submitted review of agent-runner/<ID>: a follow-up of that task; of another branch or a fork: nothing', () => {
    const review = example('pull_request_review', 'submitted');
    review.review.body = 'Rename the helper.';
    expect(decide(normaliseGithub('pull_request_review', review))).toMatchObject({
      kind: 'ignore',
      reason: expect.stringContaining('not one agent-runner opened'),
    });
    review.pull_request.head.ref = 'agent-runner/add-slugify';
    expect(decide(normaliseGithub('pull_request_review', review))).toMatchObject({
      kind: 'followup',
      request: review.pull_request.number,
      taskId: 'add-slugify',
      actor: review.sender.login,
    });
    review.pull_request.head.repo.full_name = 'someone/fork';
    expect(decide(normaliseGithub('pull_request_review', review))).toMatchObject({ kind: 'ignore' });

    const dismissed = example('pull_request_review', 'dismissed');
    dismissed.pull_request.head.ref = 'agent-runner/add-slugify';
    expect(decide(normaliseGithub('pull_request_review', dismissed))).toMatchObject({ kind: 'ignore' });
  });

  it('a line comment: a follow-up only when it names the trigger (the review event covers the rest)', () => {
    const comment = example('pull_request_review_comment', 'created');
    comment.pull_request.head.ref = 'agent-runner/add-slugify';
    expect(decide(normaliseGithub('pull_request_review_comment', comment))).toMatchObject({ kind: 'ignore' });
    comment.comment.body = '@agent-runner use a regex here';
    expect(decide(normaliseGithub('pull_request_review_comment', comment))).toMatchObject({
      kind: 'followup',
      taskId: 'add-slugify',
    });
  });

  it('a comment on a pull request: its branch is looked up before it counts', async () => {
    const comment = example('issue_comment', 'created');
    comment.issue.pull_request = { url: 'x' };
    comment.comment.body = '@agent-runner also handle unicode';
    const decided = decide(normaliseGithub('issue_comment', comment));
    expect(decided).toMatchObject({ kind: 'followup', taskId: undefined });
    const lookup = (ref: string): ForgeAccess => ({
      canWrite: async () => true,
      headBranch: async () => ({ ref, sameRepository: true }),
    });
    expect(await authorise(decided, lookup('agent-runner/x1'))).toMatchObject({
      kind: 'followup',
      taskId: 'x1',
    });
    expect(await authorise(decided, lookup('feature'))).toMatchObject({ kind: 'ignore' });
  });
});

it('events agent-runner does not act on: nothing, with the reason', () => {
  for (const name of ['ping', 'push', 'star'])
    expect(decide(normaliseGithub(name, example('ping')))).toMatchObject({ kind: 'ignore' });
  expect(mentions('cc @agent-runner.', '@agent-runner')).toBe(true);
  expect(mentions('email me@agent-runner', '@agent-runner')).toBe(false);
});

it('only a person with write access instructs', async () => {
  const payload = example('issues', 'labeled');
  payload.label.name = 'agent-runner';
  const decided = decide(normaliseGithub('issues', payload));
  expect(await authorise(decided, everyone)).toMatchObject({ kind: 'task' });
  expect(await authorise(decided, { ...everyone, canWrite: async () => false })).toMatchObject({
    kind: 'ignore',
    refused: true,
    reason: expect.stringContaining('Codertocat has no write access'),
  });
  expect(issuePrd({ number: 3, title: '', body: '', author: '', labels: [], assignees: [] })).toContain(
    'Issue 3',
  );
});

describe("the Action's decide step (its run: text from action.yml) against a scripted GitHub", () => {
  let github: ScriptedGitHubServer;
  let dir: string;
  beforeAll(async () => {
    github = await new ScriptedGitHubServer().start();
    dir = mkdtempSync(path.join(tmpdir(), 'forge-event-'));
  });
  afterAll(async () => {
    await github?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The Action's own "Decide from the event" step: its `run:` text, with its `env:` as the inputs' defaults. */
  const decideStep = (
    parse(readFileSync(path.join(ROOT, 'action.yml'), 'utf8')) as {
      runs: { steps: { id?: string; run?: string }[] };
    }
  ).runs.steps.find((candidate) => candidate.id === 'decide');

  async function step(name: string, payload: Payload): Promise<Record<string, string>> {
    const event = path.join(dir, 'event.json');
    const output = path.join(dir, `output-${Math.random()}`);
    writeFileSync(event, JSON.stringify(payload));
    writeFileSync(output, '');
    await promisify(execFile)('bash', ['-e', '-c', decideStep?.run ?? 'exit 9'], {
      env: {
        PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        GITHUB_ACTION_PATH: ROOT,
        RUNNER_TEMP: dir,
        AR_LABEL: 'agent-runner',
        AR_TRIGGER: '@agent-runner',
        AR_ASSIGNEE: '',
        GITHUB_EVENT_NAME: name,
        GITHUB_EVENT_PATH: event,
        GITHUB_OUTPUT: output,
        GITHUB_API_URL: github.url,
        GITHUB_REPOSITORY: 'Codertocat/Hello-World',
        GITHUB_TOKEN: 'ghs_job_token',
      },
    });
    return Object.fromEntries(
      readFileSync(output, 'utf8')
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
  }

  it('a labelled issue by a writer: task; by a reader: refused, nothing runs; a ping: ignore', async () => {
    const payload = example('issues', 'labeled');
    payload.label.name = 'agent-runner';
    github.review.permissions.set('Codertocat', 'maintain');
    expect(await step('issues', payload)).toMatchObject({
      kind: 'task',
      'issue-number': '1',
      refused: 'false',
    });
    github.review.permissions.set('Codertocat', 'triage');
    expect(await step('issues', payload)).toMatchObject({ kind: 'ignore', refused: 'true' });
    expect(await step('ping', example('ping'))).toMatchObject({ kind: 'ignore', refused: 'false' });
    const asked = github.calls.filter((call) => call.operation === 'permission');
    expect(asked).toHaveLength(2);
    expect(asked[0]?.authorization).toBe('Bearer ghs_job_token');
    github.assertValid();
  });

  it('a review of agent-runner/<ID> by a writer: follow-up with the task id', async () => {
    const review = example('pull_request_review', 'submitted');
    review.pull_request.head.ref = 'agent-runner/add-slugify';
    review.review.state = 'changes_requested';
    github.review.permissions.set('Codertocat', 'write');
    expect(await step('pull_request_review', review)).toMatchObject({
      kind: 'followup',
      'task-id': 'add-slugify',
      'request-number': String(review.pull_request.number),
      'request-url': `https://github.com/Codertocat/Hello-World/pull/${review.pull_request.number}`,
    });
    const message = readFileSync(path.join(dir, 'agent-runner-followup.md'), 'utf8');
    expect(message).toContain('request #2');
    expect(message).toMatch(/```text\n/);
    // The access checker in the module is the same one the step used.
    expect(
      await githubAccess({ api: github.url, repository: 'Codertocat/Hello-World' }).canWrite('nobody'),
    ).toBe(false);
    github.assertValid();
  });
});
