/**
 * `run --pr` end to end: the real CLI, real git, a real Docker sandbox and the real codex binary with scripted
 * models; the task's repository has a real git remote over HTTP as `origin` (basic auth with the token) and
 * the pull request goes to a scripted GitHub REST server validated against GitHub's OpenAPI description.
 * COMPLETE, the branch on the remote, one pull request whose body holds the criteria and the DoD; delivering
 * again updates the same pull request. A task that ends NEEDS_REVIEW opens a draft; its resume that ends COMPLETE
 * updates that pull request (never a second), rewrites its body and makes it ready for review, with the forge
 * the run was started with (`--forge`), which the resume does not repeat.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCliCaptured } from '../support/cli.js';
import { filesUnder } from '../support/files-under.js';
import { nodeRepoOnGitHub } from '../support/github-repo.js';
import { assessmentReply, decisionReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { commandCall, type ScriptedReply } from '../support/scripted-responses-server.js';
import { codexTurn, commitSlugTurn, jsonSummary, scriptedRunEnv } from '../support/demo-task.js';
import { taskContainers } from '../support/task-containers.js';
import { readDeliveries, type DeliveryOutcome } from '../../src/deliver/delivery-record.js';
import { SLUG_BROKEN_JS, SLUG_JS, git, writeFileCommand } from '../support/task-repo.js';

const models = scriptedModelServers();
const TOKEN = 'ghp_e2eDeliverToken0123456789abcdefABCDEF';

/**
 * The worker looks for the token from inside the sandbox: in the environment of every process it can read and
 * in the files of the directories it can reach. The command holds only the token's base64 (the journal shows
 * it), and first plants the token in a canary file, so the probe proves it sees it where it is. The hits go to
 * CODEX_HOME, which the host keeps.
 */
const PROBE = [
  `T=$(printf %s '${Buffer.from(TOKEN).toString('base64')}' | base64 -d)`,
  'printf %s "$T" > /tmp/ar-canary',
  'hits=$( { for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f" 2>/dev/null | grep -qF "$T" && echo "$f"; done;' +
    ' grep -rlsF -D skip "$T" /workspace /tmp /home /root "$CODEX_HOME" /run /etc; } | sort -u | tr "\\n" " ")',
  'echo "probe hits: $hits" > "$CODEX_HOME/ar-probe.txt"',
].join('; ');

const commitSlug: ScriptedReply[] = [{ kind: 'output', items: [commandCall(PROBE)] }, ...commitSlugTurn()];

/** The summary `--json` ends with, as these tests read it. */
interface DeliveredSummary {
  state: string;
  headSha: string;
  exitCode: number;
  delivery: DeliveryOutcome;
}

/**
 * Task `id`'s repository (the Node task) with an HTTP remote as origin that takes TOKEN, the scripted GitHub
 * server, a config file naming it (plus `deliverYaml` under `deliver:`), the run's environment with GH_TOKEN.
 * `forge: 'flag'` leaves the forge out of the config: the run names it with `--forge github`.
 */
async function deliveryFixture(id: string, deliverYaml = '', forge: 'config' | 'flag' = 'config') {
  const { repo, remote, github } = await nodeRepoOnGitHub(TOKEN);
  onTestFinished(async () => {
    expect(await taskContainers(id, repo.root)).toEqual([]);
  });
  const configDir = mkdtempSync(path.join(tmpdir(), 'ar-deliver-config-'));
  onTestFinished(() => rmSync(configDir, { recursive: true, force: true }));
  const config = path.join(configDir, 'agent-runner.yaml');
  const named = forge === 'config' ? '  forge: github\n' : '';
  writeFileSync(config, `deliver:\n${named}  apiUrl: ${github.url}\n${deliverYaml}`);
  const env = scriptedRunEnv(models, 'e2e-deliver-key-value-1234', { GH_TOKEN: TOKEN });
  return { repo, remote, github, config, env };
}

describe('run --pr (end to end)', () => {
  it('COMPLETE, the branch pushed from the host, one pull request with the evidence; deliver again updates it', async () => {
    const id = 'e2e-deliver-pr';
    const { repo, remote, github, config, env } = await deliveryFixture(id);
    models.chat.push(
      {
        reply: planReply(id, [
          { id: 'AC-1', description: 'slugify("Hello Big World") is "hello-big-world"' },
        ]),
      },
      { reply: runWorkerReply('Implement slugify in slug.js with a test in slug.test.js, commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'slugify is implemented, tested and committed.') },
    );
    models.responses.enqueue(...commitSlug);
    const result = await runCliCaptured(
      ['run', '--prd', 'PRD.md', '--task-id', id, '--json', '--pr', '--config', config],
      { cwd: repo.root, env },
    );
    const summary = jsonSummary<DeliveredSummary>(result.stdout);
    expect(summary.state, result.stderr).toBe('COMPLETE');
    expect(result.exitCode).toBe(0);
    expect(summary.delivery).toMatchObject({
      pushed: true,
      url: 'https://github.test/acme/app/pull/1',
      error: null,
      sha: summary.headSha,
    });
    expect(await remote.ref('acme/app', `agent-runner/${id}`)).toBe(summary.headSha);
    expect(github.pulls.size).toBe(1);
    const pull = github.pulls.get(1) as { title: string; body: string; draft: boolean };
    expect(pull.title).toBe('Add slugify');
    expect(pull.draft).toBe(false);
    expect(pull.body).toMatch(
      /## Acceptance criteria\n\n\| \| Criterion \| Check \| Result \| Assessment \|/,
    );
    expect(pull.body).toContain('| `AC-1`');
    expect(pull.body).toContain('## Definition of Done');
    expect(pull.body).toContain('`npm test`');
    expect(pull.body).toContain('| 1 | codex | `scripted-test-model` |');
    expect(`${result.stdout}${result.stderr}${pull.body}`).not.toContain(TOKEN);
    // From inside the sandbox the token is nowhere but in the probe's own canary.
    const probe = readFileSync(
      path.join(repo.root, '.agent-runner', 'runs', id, 'codex-home', 'ar-probe.txt'),
      'utf8',
    );
    expect(probe.trim()).toBe('probe hits: /tmp/ar-canary');
    // Nor in anything the runner wrote: journal, note, logs, the sandbox repository.
    const written = filesUnder(path.join(repo.root, '.agent-runner'), 'latin1');
    expect(written.length).toBeGreaterThan(10);
    expect(written.filter(({ text }) => text.includes(TOKEN)).map(({ file }) => file)).toEqual([]);

    const again = await runCliCaptured(['deliver', id, '--pr', '--config', config], { cwd: repo.root, env });
    expect(again.stderr).toBe('');
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toContain('https://github.test/acme/app/pull/1');
    expect(github.pulls.size).toBe(1);
    expect(github.calls.map((call) => call.operation)).toEqual(['list', 'create', 'list', 'update']);

    // A reviewer verifies the pull request by its URL: its head ref (kept by GitHub under refs/pull/1/head, the
    // commit the API names) and the evidence come from the remote.
    git(repo.root, 'push', '-q', remote.path('acme/app'), `${summary.headSha}:refs/pull/1/head`);
    github.setHead(1, { sha: summary.headSha });
    const verified = await runCliCaptured(
      ['verify', 'https://github.test/acme/app/pull/1', '--json', '--config', config],
      { cwd: repo.root, env },
    );
    expect(verified.exitCode, verified.stderr).toBe(0);
    const report = JSON.parse(verified.stdout) as { branch: string; headSha: string; allHold: boolean };
    expect(report).toMatchObject({
      branch: 'origin/pull/1/head',
      headSha: summary.headSha,
      allHold: true,
    });
    expect(github.calls.at(-1)?.operation).toBe('get');
    expect(`${verified.stdout}${verified.stderr}`).not.toContain(TOKEN);
    github.assertValid();
  });

  it('NEEDS_REVIEW opens a draft; resume --pr ends COMPLETE: the same pull request, its body rewritten, ready for review', async () => {
    const id = 'e2e-deliver-resume';
    // A task that is not COMPLETE is delivered too, as a draft. The forge is named by --forge on the run only:
    // the resume finds it in the task's journal (the remote's host, 127.0.0.1, says nothing).
    const { repo, remote, github, config, env } = await deliveryFixture(id, '  when: always\n', 'flag');
    // The first attempt commits a slugify that fails its test, and the Meta-agent asks a person: NEEDS_REVIEW.
    models.chat.push(
      {
        reply: planReply(id, [
          {
            id: 'AC-1',
            description: 'slugify("Hello Big World") is "hello-big-world"',
            check: { kind: 'command', command: 'npm test' },
          },
        ]),
      },
      { reply: runWorkerReply('Implement slugify in slug.js with a test in slug.test.js, commit.') },
      { reply: assessmentReply(false, ['AC-1'], 'slugify returns its input unchanged; npm test fails.') },
      {
        reply: decisionReply(
          'ask_human',
          'The test fails and the PRD leaves the separators open.',
          'Which characters separate words?',
        ),
      },
    );
    models.responses.enqueue(...commitSlugTurn(SLUG_BROKEN_JS));
    const first = await runCliCaptured(
      ['run', '--prd', 'PRD.md', '--task-id', id, '--json', '--pr', '--forge', 'github', '--config', config],
      { cwd: repo.root, env },
    );
    const draft = jsonSummary<DeliveredSummary>(first.stdout);
    expect(draft.state, first.stderr).toBe('NEEDS_REVIEW');
    expect(draft.delivery).toMatchObject({
      pushed: true,
      url: 'https://github.test/acme/app/pull/1',
      changeRequest: { number: 1, draft: true },
    });
    const pull = github.pulls.get(1) as { draft: boolean; body: string; node_id: string };
    expect(pull.draft).toBe(true);
    const draftBody = pull.body;
    expect(draftBody).toContain('NEEDS_REVIEW');

    // The resume fixes slugify: COMPLETE, and the same pull request follows.
    models.chat.push(
      { reply: runWorkerReply('Make slugify join lower-case words with "-", commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'slugify joins lower-case words; npm test passes.') },
    );
    models.responses.enqueue(
      ...codexTurn(
        [writeFileCommand('slug.js', SLUG_JS), "git commit -q -am 'Fix slugify'"],
        'Fixed slugify.',
      ),
    );
    const resumed = await runCliCaptured(['resume', id, '--json', '--pr', '--config', config], {
      cwd: repo.root,
      env,
    });
    const done = jsonSummary<DeliveredSummary>(resumed.stdout);
    expect(done.state, resumed.stderr).toBe('COMPLETE');
    expect(resumed.exitCode).toBe(0);
    expect(done.delivery).toMatchObject({
      pushed: true,
      error: null,
      url: 'https://github.test/acme/app/pull/1',
      changeRequest: { number: 1, draft: false },
    });
    // One pull request, never a second: ready for review now, its body the new evidence.
    expect(github.pulls.size).toBe(1);
    expect(github.calls.filter((call) => call.operation === 'create')).toHaveLength(1);
    expect(pull.draft).toBe(false);
    expect(pull.body).not.toBe(draftBody);
    expect(pull.body).toContain(done.headSha.slice(0, 12));
    expect(pull.body).not.toContain('NEEDS_REVIEW');
    const ready = github.calls.filter((call) => call.operation === 'graphql');
    expect(ready).toHaveLength(1);
    expect(ready[0]?.body).toMatchObject({ variables: { id: pull.node_id } });
    expect(ready[0]?.body?.query).toContain('markPullRequestReadyForReview');
    // The branch moved on the remote from what agent-runner pushed first, under a lease on exactly that commit.
    expect(await remote.ref('acme/app', `agent-runner/${id}`)).toBe(done.headSha);
    const pushes = readDeliveries(path.join(repo.root, '.agent-runner', 'runs', id)).map((item) => item.sha);
    expect(pushes).toEqual([draft.headSha, done.headSha]);
    expect(`${first.stdout}${first.stderr}${resumed.stdout}${resumed.stderr}${pull.body}`).not.toContain(
      TOKEN,
    );
    github.assertValid();
  });
});
