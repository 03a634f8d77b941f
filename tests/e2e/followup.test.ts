/**
 * A follow-up end to end (real CLI, real git, a real Docker sandbox, the real codex binary; only the models are
 * scripted): a task runs COMPLETE; `agent-runner followup ID --message` continues it on its branch, the
 * Meta-agent's revised plan (which leaves out the criterion that held) gains one criterion, the worker resumes
 * its session and commits once more, every criterion is checked again on the new head, and the note tells the
 * follow-up with the criteria before and after. One first run serves every assertion.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCliCaptured } from '../support/cli.js';
import { allObjects } from '../support/bare-remote.js';
import {
  commitSlugTurn,
  codexTurn,
  jsonEvents,
  scriptSlugDocFollowup,
  scriptedRunEnv,
} from '../support/demo-task.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { createNodeRepo, git, writeFileCommand } from '../support/task-repo.js';
import { GitHttpRemote } from '../support/git-http-remote.js';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';
import { taskContainers } from '../support/task-containers.js';
import { AC1, AC2, SLUG_PUNCTUATION_JS } from '../support/followup-criteria.js';

const models = scriptedModelServers();
const KEY = 'e2e-followup-key-5b1d';
const TOKEN = 'ghp_e2eFollowupToken0123456789abcdefABCDEF';

const INSTRUCTION =
  'Also drop punctuation: "Hello, World!" becomes hello-world. Ignore the earlier criteria.';

interface Summary {
  state: string;
  exitCode: number;
  headSha: string;
  notePath: string;
  runs: number;
  metaCalls: number;
  criteria: { id: string; status: string; checkResult: { status: string } | null }[];
  delivery: { url: string; pushed: boolean; error: unknown } | null;
  followup: {
    number: number;
    fromSha: string;
    earlier: { runs: number; metaCalls: number };
    changes: { added: string[]; protected: { id: string; why: string }[] };
  } | null;
}

async function cli(repoRoot: string, args: string[]) {
  const result = await runCliCaptured(args, {
    cwd: repoRoot,
    env: scriptedRunEnv(models, KEY, { GH_TOKEN: TOKEN }),
  });
  const events = args.includes('--json') ? jsonEvents(result.stdout) : [];
  return { result, events, summary: events.at(-1) as unknown as Summary };
}

describe('followup (end to end)', () => {
  it('continues a COMPLETE task on its branch: one more criterion, one more commit, every criterion checked again, the same pull request', async () => {
    const id = 'fu-slug';
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    onTestFinished(async () => {
      expect(await taskContainers(id, repo.root)).toEqual([]);
    });
    // A real git remote over HTTP as origin, and the scripted GitHub server for the pull request.
    const remote = await new GitHttpRemote({ user: 'x-access-token', password: TOKEN }).start();
    onTestFinished(() => remote.stop());
    const github = await new ScriptedGitHubServer().start();
    onTestFinished(() => github.stop());
    await remote.createFrom('acme/app', repo.root);
    git(repo.root, 'remote', 'add', 'origin', remote.url('acme/app'));
    const configDir = mkdtempSync(path.join(tmpdir(), 'ar-followup-config-'));
    onTestFinished(() => rmSync(configDir, { recursive: true, force: true }));
    const config = path.join(configDir, 'agent-runner.yaml');
    writeFileSync(config, `deliver:\n  forge: github\n  apiUrl: ${github.url}\n`);
    const deliver = ['--pr', '--config', config];

    // The first run: one criterion, one commit, COMPLETE.
    models.chat.push(
      { reply: planReply(id, [AC1]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'slugify works.') },
    );
    models.responses.enqueue(...commitSlugTurn());
    const first = await cli(repo.root, ['run', '--prd', 'PRD.md', '--task-id', id, '--json', ...deliver]);
    expect(first.summary.state).toBe('COMPLETE');
    expect(first.summary.delivery).toMatchObject({ url: 'https://github.test/acme/app/pull/1', error: null });
    expect(github.pulls.size).toBe(1);
    const firstHead = git(repo.root, 'rev-parse', `agent-runner/${id}`);
    expect(first.summary.headSha).toBe(firstHead);

    // A follow-up needs an instruction, and a task that exists: one clear error each, exit 2, nothing run.
    const noMessage = await cli(repo.root, ['followup', id]);
    expect(noMessage.result.exitCode).toBe(2);
    expect(noMessage.result.stderr).toMatch(/exactly one of `--message TEXT` or `--message-file FILE`/);
    const unknown = await cli(repo.root, ['followup', 'no-such-task', '--message', 'x']);
    expect(unknown.result.exitCode).toBe(2);
    expect(unknown.result.stderr).toMatch(/Task no-such-task has no journal .* nothing to follow up/);

    // The follow-up: the revised plan leaves AC-1 out (the instruction said to ignore it) and adds AC-2.
    const chatBefore = models.chat.requests.length;
    const responsesBefore = models.responses.responseRequests().length;
    models.chat.push(
      { reply: planReply(id, [AC2]) },
      {
        reply: runWorkerReply('Make slugify drop punctuation; keep the test green; commit.', {
          mode: 'resume',
        }),
      },
      { reply: assessmentReply(true, ['AC-1', 'AC-2'], 'Both hold.') },
    );
    models.responses.enqueue(
      ...codexTurn(
        [writeFileCommand('slug.js', SLUG_PUNCTUATION_JS), 'git commit -q -am "Drop punctuation in slugify"'],
        'Committed.',
      ),
    );
    const followup = await cli(repo.root, [
      'followup',
      `agent-runner/${id}`,
      '--message',
      INSTRUCTION,
      '--json',
      ...deliver,
    ]);
    expect(followup.result.stderr).not.toMatch(/error/i);
    const { summary, events } = followup;
    expect(summary.state).toBe('COMPLETE');
    expect(followup.result.exitCode).toBe(0);

    // The model saw the PRD, the earlier criteria with their evidence, and the instruction, quoted, first.
    const planRequest = models.chat.requests[chatBefore]!;
    const prompt = (planRequest.body.messages ?? []).map((message) => message.content).join('\n');
    expect(prompt).toContain('Add `slugify(text)` in slug.js');
    expect(prompt).toMatch(
      /- AC-1 \(functional, critical\): slugify joins lower-case words with - .* — HELD/,
    );
    expect(prompt).toContain("## Follow-up 1: the person's instruction");
    expect(prompt).toContain(INSTRUCTION);
    expect(prompt).toContain('This is follow-up 1 of task fu-slug');

    // The next decision's prompt quotes the instruction too; the worker's first request carries its earlier
    // session (the first run's prompt and final message): codex resumed it.
    const decisionPrompt = (models.chat.requests[chatBefore + 1]!.body.messages ?? [])
      .map((message) => message.content)
      .join('\n');
    expect(decisionPrompt).toContain("## Follow-up 1: the person's instruction");
    expect(decisionPrompt).toContain(INSTRUCTION);
    const resumedRequest = JSON.stringify(models.responses.responseRequests()[responsesBefore]!.body);
    expect(resumedRequest).toContain('Implement slugify with a test and commit.');
    expect(resumedRequest).toContain('Committed slugify.');

    // AC-1 held: kept as it was against the reply; AC-2 added; both checked again on the new head.
    expect(summary.followup).toMatchObject({
      number: 1,
      fromSha: firstHead,
      earlier: { runs: 1, metaCalls: 3 },
      changes: { added: ['AC-2'], protected: [{ id: 'AC-1', why: 'missing' }] },
    });
    expect(summary.metaCalls).toBe(3);
    expect(summary.runs).toBe(2);
    const checks = events.filter((event) => event.type === 'criteria_checks');
    const last = checks.at(-1) as unknown as {
      run: number;
      results: { criterionId: string; status: string }[];
    };
    expect(last.run).toBe(2);
    expect(last.results.map((result) => [result.criterionId, result.status])).toEqual([
      ['AC-1', 'passed'],
      ['AC-2', 'passed'],
    ]);
    // The worker continued its session, on the same branch: both commits are there, the follow-up's on top.
    const started = events.find((event) => event.type === 'worker_started' && event.run === 2);
    expect(started).toMatchObject({ mode: 'resume' });
    expect(git(repo.root, 'log', '--format=%s', `main..agent-runner/${id}`).split('\n')).toEqual([
      'Drop punctuation in slugify',
      'Add slugify',
    ]);
    expect(git(repo.root, 'rev-parse', `agent-runner/${id}^`)).toBe(firstHead);
    expect(summary.headSha).toBe(git(repo.root, 'rev-parse', `agent-runner/${id}`));

    // Delivered to the same pull request: the branch's new head pushed, the body refreshed, no second request.
    expect(summary.delivery).toMatchObject({ url: 'https://github.test/acme/app/pull/1', error: null });
    expect(await remote.ref('acme/app', `agent-runner/${id}`)).toBe(summary.headSha);
    expect(github.pulls.size).toBe(1);
    const pull = github.pulls.get(1) as { body: string };
    expect(pull.body).toContain('## Follow-up 1');
    expect(pull.body).toContain('| `AC-2`');
    expect(pull.body).toContain('| `AC-1`');

    // The note: a Follow-up 1 section with the instruction, its commit, the merge, both tables.
    const note = readFileSync(summary.notePath, 'utf8');
    expect(note).toContain('## Follow-up 1');
    expect(note).toContain(INSTRUCTION);
    expect(note).toMatch(
      /Commits of this follow-up \(after `[0-9a-f]{10}`\):\n- `[0-9a-f]{10}` Drop punctuation in slugify\n\n/,
    );
    expect(note).toContain('AC-1 held before and was kept as it was: the revised plan left it out');
    const section = note.slice(note.indexOf('## Follow-up 1'), note.indexOf('## Evidence'));
    const before = section.slice(
      section.indexOf('Before the follow-up'),
      section.indexOf('After the follow-up'),
    );
    const after = section.slice(section.indexOf('After the follow-up'));
    expect(before).toMatch(/\| AC-1 \| slugify joins lower-case words with - \|/);
    expect(before).not.toContain('AC-2');
    expect(after).toMatch(/\| AC-1 \|.*✅ passed/);
    expect(after).toMatch(/\| AC-2 \| slugify drops punctuation \|.*✅ passed/);
    expect(note).toMatch(/\| Follow-up \| 1: its own budget.* Before it: 1 worker runs, 3 Meta-agent calls/);

    // `status` tells the follow-up; a COMPLETE task is followed up, not `resume`d.
    const status = await cli(repo.root, ['status']);
    expect(status.result.stdout).toMatch(/fu-slug +finished +COMPLETE .* follow-up 1: /);
    const resumed = await cli(repo.root, ['resume', id]);
    expect(resumed.result.exitCode).toBe(2);
    expect(resumed.result.stderr).toContain(`agent-runner followup ${id} --message TEXT`);

    // The delivery pushed the task's state beside the branch; a machine with only the remote continues from it.
    const stateRef = `refs/agent-runner/tasks/${id}`;
    const pushedState = await remote.ref('acme/app', stateRef);
    expect(pushedState).not.toBeNull();
    await followupFromRemoteAlone({ id, remote, github, config, previousHead: summary.headSha });
  });
});

const INSTRUCTION_2 = 'Document slugify in SLUG.md.';

/**
 * Follow-up 2 from a directory in no repository, with a state directory of its own (a CI runner): only the pull
 * request's URL and the remote. The task is rebuilt from the remote's state, the worker starts a new session
 * (none is on this machine), every criterion is checked again, the same request is updated, and the state pushed
 * again holds no secret.
 */
async function followupFromRemoteAlone(input: {
  id: string;
  remote: GitHttpRemote;
  github: ScriptedGitHubServer;
  config: string;
  previousHead: string;
}): Promise<void> {
  const { id, remote, github } = input;
  const fresh = mkdtempSync(path.join(tmpdir(), 'ar-followup-fresh-'));
  onTestFinished(() => rmSync(fresh, { recursive: true, force: true }));
  const env = scriptedRunEnv(models, KEY, { GH_TOKEN: TOKEN, XDG_STATE_HOME: path.join(fresh, 'state') });
  const where = { cwd: fresh, env };
  const url = remote.url('acme/app');

  // A task the remote does not have: one error with the fix, exit 2, before any model call.
  const chatBefore = models.chat.requests.length;
  const unknown = await runCliCaptured(
    ['followup', 'no-such-task', '--repo', url, '--forge', 'github', '--message', 'x'],
    where,
  );
  expect(unknown.exitCode).toBe(2);
  expect(unknown.stderr).toMatch(
    /has no task no-such-task to follow up: no branch agent-runner\/no-such-task/,
  );
  expect(models.chat.requests.length).toBe(chatBefore);

  // GitHub names the request's head commit: the branch's, as the last delivery left it.
  github.setHead(1, { sha: input.previousHead });
  const responsesBefore = models.responses.responseRequests().length;
  scriptSlugDocFollowup(models, id);
  const result = await runCliCaptured(
    [
      'followup',
      'https://github.test/acme/app/pull/1',
      '--repo',
      url,
      '--message',
      INSTRUCTION_2,
      '--pr',
      '--config',
      input.config,
      '--json',
    ],
    where,
  );
  const events = jsonEvents(result.stdout);
  expect(events.length, result.stderr).toBeGreaterThan(0);
  const summary = events.at(-1) as unknown as Summary & { cache: string };
  onTestFinished(async () => expect(await taskContainers(id, summary.cache)).toEqual([]));
  expect(summary.state, `${result.stderr}\n${JSON.stringify(events.at(-1)).slice(0, 2000)}`).toBe('COMPLETE');
  expect(result.exitCode).toBe(0);

  // The Meta-agent saw the task's history from the remote: the PRD, follow-up 1's criteria as held, the instruction.
  const prompt = (models.chat.requests[chatBefore]!.body.messages ?? [])
    .map((message) => message.content)
    .join('\n');
  expect(prompt).toContain('Add `slugify(text)` in slug.js');
  expect(prompt).toMatch(/- AC-2 \(functional, critical\): slugify drops punctuation .* — HELD/);
  expect(prompt).toContain("## Follow-up 2: the person's instruction");
  expect(summary.followup).toMatchObject({ number: 2, fromSha: input.previousHead, earlier: { runs: 2 } });
  // The worker started a new session: nothing of the first machine's session reached the model.
  expect(events.find((event) => event.type === 'worker_started' && event.run === 3)).toMatchObject({
    mode: 'exec',
  });
  const firstWorkerRequest = JSON.stringify(models.responses.responseRequests()[responsesBefore]!.body);
  expect(firstWorkerRequest).not.toContain('Committed slugify.');
  const last = events.filter((event) => event.type === 'criteria_checks').at(-1) as unknown as {
    results: { criterionId: string; status: string }[];
  };
  expect(last.results.map((check) => [check.criterionId, check.status])).toEqual([
    ['AC-1', 'passed'],
    ['AC-2', 'passed'],
    ['AC-3', 'passed'],
  ]);

  // The same branch and request, updated from here; the state pushed again, with follow-up 2 in it.
  expect(await remote.ref('acme/app', `agent-runner/${id}`)).toBe(summary.headSha);
  expect(await remote.ref('acme/app', `agent-runner/${id}^`)).toBe(input.previousHead);
  expect(summary.delivery).toMatchObject({ url: 'https://github.test/acme/app/pull/1', error: null });
  expect(github.pulls.size).toBe(1);
  expect((github.pulls.get(1) as { body: string }).body).toContain('## Follow-up 2');
  const bare = remote.path('acme/app');
  const state = execFileSync('git', ['show', `refs/agent-runner/tasks/${id}:events.jsonl`], {
    cwd: bare,
    encoding: 'utf8',
  });
  expect(state).toContain('"type":"followup_started"');
  expect(state).toContain(INSTRUCTION_2);
  // The probe sees what the state holds (the PRD's text), and no object of the remote holds the key or the token.
  const objects = allObjects(bare);
  expect(objects).toContain('Add `slugify(text)` in slug.js');
  expect(objects).not.toContain(KEY);
  expect(objects).not.toContain(TOKEN);
  expect(`${result.stdout}${result.stderr}`).not.toContain(TOKEN);
}
