/**
 * The evidence a task leaves on its branch and what `verify` makes of it: the record's schema round trip from
 * a task's own record shape, the note written and read with real git (on the head, on an ancestor when the
 * branch moved), the target forms `verify` accepts, and the comparison of recorded results with new ones.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { criterionEvidenceSchema, runRecordSchema } from '../../src/core/records.js';
import type { TaskRecord } from '../../src/core/task-record.js';
import type { CriterionCheckResult, DodOutcome, RunRecord } from '../../src/core/types.js';
import { compareEvidence } from '../../src/verify/compare-evidence.js';
import { EVIDENCE_NOTES_REF, readEvidenceNote, writeEvidenceNote } from '../../src/verify/evidence-note.js';
import { evidenceOf, evidenceRecordSchema, type EvidenceRecord } from '../../src/verify/evidence-record.js';
import { findEvidence } from '../../src/verify/find-evidence.js';
import { recordEvidence } from '../../src/verify/record-evidence.js';
import { recordedCriteria, withRecordedDod } from '../../src/verify/run-verify.js';
import { resolveVerifyTarget } from '../../src/verify/verify-target.js';
import { validateConfig } from '../../src/config/load.js';
import { runCliCaptured } from '../support/cli.js';
import { createTempRepo } from '../support/git-repo.js';
import { createGitHubForge } from '../../src/deliver/github-forge.js';
import { createGitLabForge } from '../../src/deliver/gitlab-forge.js';
import { ScriptedGitHubServer } from '../support/scripted-github-server.js';
import { ScriptedGitLabServer } from '../support/scripted-gitlab-server.js';
import { GitHttpRemote } from '../support/git-http-remote.js';

const BASE = 'a'.repeat(40);
const HEAD = 'b'.repeat(40);

const dod: DodOutcome = {
  status: 'passed',
  source: 'config',
  ranOnDirtyTree: false,
  results: [
    {
      name: 'test',
      command: 'npm test',
      status: 'passed',
      exitCode: 0,
      durationMs: 1200,
      outputTail: '# pass 2\n# fail 0',
      tests: { passed: 2, failed: 0, skipped: 0 },
      base: { status: 'failed', exitCode: 1, verdict: 'red_before' },
    },
    { name: 'lint', command: 'npm run lint', status: 'passed', exitCode: 0, durationMs: 300, outputTail: '' },
  ],
};

const criterionCheck: CriterionCheckResult = {
  criterionId: 'AC-1',
  critical: true,
  kind: 'command',
  target: 'node cli.js hello',
  status: 'passed',
  exitCode: 0,
  durationMs: 90,
  outputTail: 'hello',
  reason: '',
  ranOnDirtyTree: false,
};

function taskRecord(headSha: string = HEAD): TaskRecord {
  // Parsed by the journal's own schema: the shape a task really records.
  const run: RunRecord = runRecordSchema.parse({
    index: 1,
    decision: { action: 'run_worker', reason: 'go', usedPatterns: [] },
    startedAt: 0,
    durationMs: 10,
    mode: 'exec',
    exitCode: 0,
    timedOut: false,
    failed: false,
    threadId: null,
    commands: [],
    finalMessage: 'done',
    errors: [],
    usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 },
    facts: {
      baseSha: BASE,
      headSha,
      commits: [{ sha: headSha, subject: 'work' }],
      dirty: false,
      uncommitted: [],
      changedFiles: ['cli.js'],
      diffStat: '',
      diff: '',
      scopeViolations: [],
      taskBranch: { name: 'agent-runner/T1', headSha },
    },
    dod,
    criteriaChecks: [criterionCheck],
    checkedHead: headSha,
    refusals: [],
  });
  return {
    taskId: 'T1',
    prd: 'x',
    state: 'COMPLETE',
    reason: 'done',
    plan: null,
    task: null,
    runs: [run],
    metaCalls: 3,
    usage: {
      meta: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 },
      worker: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 },
      total: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 },
    },
    startedAt: 0,
    finishedAt: 1,
    question: null,
    preservedRef: null,
    workerType: 'codex',
    runDir: '/tmp/none',
    error: null,
    basis: [],
    criteria: [
      criterionEvidenceSchema.parse({
        id: 'AC-1',
        description: 'the CLI says hello',
        type: 'functional',
        critical: true,
        check: { kind: 'command', command: 'node cli.js hello' },
        status: 'passed',
        comment: '',
        checkResult: criterionCheck,
      }),
      criterionEvidenceSchema.parse({
        id: 'AC-2',
        description: 'a person likes it',
        type: 'manual',
        critical: false,
        check: { kind: 'manual' },
        status: 'not assessed',
        comment: '',
        checkResult: {
          ...criterionCheck,
          criterionId: 'AC-2',
          kind: 'manual',
          target: '',
          status: 'not_executed',
          exitCode: null,
          reason: 'manual checks are not executed',
        },
      }),
    ],
    baseline: { baseSha: BASE, dod: { ...dod, status: 'failed' } },
  };
}

const context = {
  image: 'agent-runner-worker:abc',
  recordedAt: '2026-01-01T00:00:00.000Z',
  version: '0.0.0',
};

describe('the evidence record', () => {
  it('round-trips through JSON and its schema from a task record', () => {
    const evidence = evidenceOf(taskRecord(), context);
    expect(evidence).not.toBeNull();
    const parsed = evidenceRecordSchema.parse(JSON.parse(JSON.stringify(evidence)));
    expect(parsed).toEqual(evidence);
    expect(parsed).toMatchObject({
      agentRunnerEvidence: 1,
      taskId: 'T1',
      state: 'COMPLETE',
      branch: 'agent-runner/T1',
      baseSha: BASE,
      headSha: HEAD,
      image: 'agent-runner-worker:abc',
    });
    expect(parsed.dod?.results[0]?.base?.verdict).toBe('red_before');
    expect(parsed.baseline?.baseSha).toBe(BASE);
    expect(parsed.criteria[0]?.checkResult?.status).toBe('passed');
  });

  it('is not made for a branch with no commit beyond its base', () => {
    expect(evidenceOf(taskRecord(BASE), context)).toBeNull();
  });

  it('refuses another version', () => {
    const evidence = evidenceOf(taskRecord(), context);
    expect(evidenceRecordSchema.safeParse({ ...evidence, agentRunnerEvidence: 2 }).success).toBe(false);
  });
});

describe('the evidence note (real git)', () => {
  it('is written on the head and read back; no note reads as none; a foreign note is refused', async () => {
    const repo = await createTempRepo({ 'a.txt': 'a' });
    const head = repo.git('rev-parse', 'HEAD').trim();
    expect(await readEvidenceNote(repo.root, head)).toBeNull();
    const evidence = { ...evidenceOf(taskRecord(head), context)!, headSha: head };
    await writeEvidenceNote(repo.root, head, JSON.stringify(evidence));
    expect(repo.git('notes', `--ref=${EVIDENCE_NOTES_REF}`, 'list').trim()).toMatch(new RegExp(` ${head}$`));
    expect(await readEvidenceNote(repo.root, head)).toEqual(evidence);
    // Written again (a resumed task ends on the same head): replaced, not refused.
    await writeEvidenceNote(repo.root, head, JSON.stringify({ ...evidence, state: 'NEEDS_REVIEW' }));
    expect((await readEvidenceNote(repo.root, head))?.state).toBe('NEEDS_REVIEW');
    repo.git('notes', `--ref=${EVIDENCE_NOTES_REF}`, 'add', '-f', '-m', 'hello', head);
    await expect(readEvidenceNote(repo.root, head)).rejects.toThrow(/not JSON/);
  });

  it('recordEvidence redacts and writes on the task branch head', async () => {
    const repo = await createTempRepo({ 'a.txt': 'a' });
    const head = repo.git('rev-parse', 'HEAD').trim();
    const written = await recordEvidence(taskRecord(head), {
      repoRoot: repo.root,
      image: 'img',
      redactJson: (text) => text.replace(/# pass 2/g, '[REDACTED]'),
    });
    expect(written).toBe(head);
    const note = repo.git('notes', `--ref=${EVIDENCE_NOTES_REF}`, 'show', head);
    expect(note).toContain('[REDACTED]');
    expect(note).not.toContain('# pass 2');
  });

  it('is found on an ancestor when the branch moved, and its absence says how to get it', async () => {
    const repo = await createTempRepo({ 'a.txt': 'a' });
    repo.git('checkout', '-q', '-b', 'agent-runner/T1');
    const recorded = await repo.commit('work', { 'b.txt': 'b' });
    await writeEvidenceNote(repo.root, recorded, JSON.stringify(evidenceOf(taskRecord(recorded), context)));
    const moved = await repo.commit('by hand', { 'c.txt': 'c' });
    const target = await resolveVerifyTarget(repo.root, 'agent-runner/T1', {});
    expect(target.headSha).toBe(moved);
    const found = await findEvidence(repo.root, target);
    expect(found.commit).toBe(recorded);
    expect(found.evidence.headSha).toBe(recorded);
    // The same through the task ID (no run data here: its branch).
    expect((await resolveVerifyTarget(repo.root, 'T1', {})).branch).toBe('agent-runner/T1');
    const bare = await resolveVerifyTarget(repo.root, 'main', {});
    await expect(findEvidence(repo.root, bare)).rejects.toThrow(
      /No agent-runner evidence on main .*`git fetch <remote> refs\/notes\/agent-runner:refs\/notes\/agent-runner/,
    );
  });
});

describe('verify targets', () => {
  it('refuses a URL that is no pull/merge request page, and a name that is nothing, as usage errors', async () => {
    const repo = await createTempRepo({ 'a.txt': 'a' });
    await expect(
      resolveVerifyTarget(repo.root, 'https://github.com/o/r/issues/12', {}),
    ).rejects.toMatchObject({
      code: 'usage',
      exitCode: 2,
      message: expect.stringMatching(/no pull request .* or merge request/),
    });
    await expect(resolveVerifyTarget(repo.root, 'no-such-branch', {})).rejects.toMatchObject({
      code: 'usage',
      exitCode: 2,
    });
    await expect(resolveVerifyTarget(repo.root, '--upload-pack=x', {})).rejects.toMatchObject({
      code: 'usage',
    });
  });
});

describe('verify on a pull/merge request URL', () => {
  const TOKEN = 'ghp_verifyRequestToken0123456789abcdefAB';

  /**
   * The base repository `acme/app` on a git http-backend remote: its own branch `feature` (code and evidence of
   * its own), and a request whose head is a fork's branch also named `feature` holding other code, kept by the
   * forge under the request's head ref (`refs/pull/1/head`, `refs/merge-requests/1/head`). A reviewer's clone
   * has the remote as origin.
   */
  async function forkRequest(headRef: string) {
    const repo = await createTempRepo({ 'a.txt': 'a' });
    repo.git('checkout', '-q', '-b', 'feature');
    const baseHead = await repo.commit('base feature', { 'b.txt': 'base' });
    await writeEvidenceNote(repo.root, baseHead, JSON.stringify(evidenceOf(taskRecord(baseHead), context)));
    repo.git('checkout', '-q', 'main');
    repo.git('checkout', '-q', '-b', 'fork-feature');
    const forkHead = await repo.commit('fork feature', { 'b.txt': 'fork' });
    await writeEvidenceNote(repo.root, forkHead, JSON.stringify(evidenceOf(taskRecord(forkHead), context)));
    const remote = await new GitHttpRemote({ user: 'x-access-token', password: TOKEN }).start();
    onTestFinished(() => remote.stop());
    await remote.createFrom('acme/app', repo.root);
    const bare = remote.path('acme/app');
    repo.git('push', '-q', bare, 'feature', `fork-feature:${headRef}`);
    repo.git('push', '-q', bare, `${EVIDENCE_NOTES_REF}:${EVIDENCE_NOTES_REF}`);
    const reviewer = await createTempRepo();
    reviewer.git('remote', 'add', 'origin', remote.url('acme/app'));
    return { baseHead, forkHead, reviewer, remote };
  }

  it("verifies a fork's pull request at refs/pull/N/head, not the base's branch of the same name", async () => {
    const { baseHead, forkHead, reviewer, remote } = await forkRequest('refs/pull/1/head');
    const github = await new ScriptedGitHubServer().start();
    onTestFinished(() => github.stop());
    const opened = await createGitHubForge({
      token: TOKEN,
      repository: 'acme/app',
      apiUrl: github.url,
    }).create('feature', 'main', { title: 'From a fork', body: 'evidence', draft: false });
    github.setHead(1, { sha: forkHead, repository: 'someone/app' });
    const access = { apiUrl: github.url, forge: 'github' as const };
    const target = await resolveVerifyTarget(reviewer.root, opened.url, { GH_TOKEN: TOKEN }, access);
    expect(target.headSha).toBe(forkHead);
    expect(target.headSha).not.toBe(baseHead);
    expect(target.branch).toBe('origin/pull/1/head');
    expect((await findEvidence(reviewer.root, target)).evidence.headSha).toBe(forkHead);
    // The remote was asked for the request's ref, with the token (the probe sees where it went).
    expect(remote.requests.some((request) => request.authorized)).toBe(true);
    expect(github.calls.map((call) => call.operation)).toEqual(['create', 'get']);
    // The forge names another commit than the remote's ref holds (it moved, or a lie): refused, exit 4.
    github.setHead(1, { sha: baseHead });
    await expect(
      resolveVerifyTarget(reviewer.root, opened.url, { GH_TOKEN: TOKEN }, access),
    ).rejects.toMatchObject({
      code: 'remote_failed',
      exitCode: 4,
      message: expect.stringMatching(
        /head of pull request 1 of acme\/app is not the commit .*refs\/pull\/1\/head/,
      ),
    });
    github.assertValid();
    // A request the forge does not know: a usage error that names it.
    await expect(
      resolveVerifyTarget(reviewer.root, opened.url.replace(/\/\d+$/, '/99'), {}, { apiUrl: github.url }),
    ).rejects.toMatchObject({
      code: 'usage',
      message: expect.stringMatching(/request 99 of acme\/app .*404/),
    });
  });

  it("verifies a fork's merge request at refs/merge-requests/N/head; no such ref is refused; GITLAB_TOKEN asked for", async () => {
    const { baseHead, forkHead, reviewer } = await forkRequest('refs/merge-requests/1/head');
    const gitlab = await new ScriptedGitLabServer().start();
    onTestFinished(() => gitlab.stop());
    const client = createGitLabForge({ token: 'gl-token-1234', repository: 'acme/app', apiUrl: gitlab.url });
    const opened = await client.create('feature', 'main', { title: 'From a fork', body: 'e', draft: false });
    expect(opened.url).toMatch(/\/-\/merge_requests\/1$/);
    gitlab.setHead(1, { sha: forkHead, sourceProjectId: 77 });
    const access = { apiUrl: gitlab.url, forge: 'github' as const };
    await expect(resolveVerifyTarget(reviewer.root, opened.url, {}, access)).rejects.toMatchObject({
      code: 'usage',
      message: expect.stringContaining('GITLAB_TOKEN'),
    });
    // The remote takes GH_TOKEN (deliver.forge: github names its credential); the API GITLAB_TOKEN.
    const env = { GITLAB_TOKEN: 'gl-token-1234', GH_TOKEN: TOKEN };
    const target = await resolveVerifyTarget(reviewer.root, opened.url, env, access);
    expect(target.headSha).toBe(forkHead);
    expect(target.headSha).not.toBe(baseHead);
    expect(target.branch).toBe('origin/merge-requests/1/head');
    // A second request whose head ref the remote lacks: refused, never its branch of the same name instead.
    await client.create('other', 'main', { title: 'Second', body: 'e', draft: false });
    gitlab.setHead(2, { sha: baseHead });
    await expect(
      resolveVerifyTarget(reviewer.root, opened.url.replace(/\/1$/, '/2'), env, access),
    ).rejects.toMatchObject({
      code: 'remote_failed',
      exitCode: 4,
      message: expect.stringMatching(/Could not fetch refs\/merge-requests\/2\/head of merge request 2/),
    });
    gitlab.assertValid();
  });
});

describe('comparing the evidence with the checks run again', () => {
  const evidence = evidenceOf(taskRecord(), context) as EvidenceRecord;

  it('holds when every check passes or fails as recorded; a check never executed is shown, not counted', () => {
    const report = compareEvidence(evidence, { dod, criteria: [criterionCheck] });
    expect(report.verdicts.map((verdict) => [verdict.check, verdict.verdict])).toEqual([
      ['DoD test', 'holds'],
      ['DoD lint', 'holds'],
      ['criterion AC-1 (command)', 'holds'],
      ['criterion AC-2 (manual)', 'not_run'],
    ]);
    expect(report.allHold).toBe(true);
  });

  it('differs when a recorded pass now fails, with exit codes', () => {
    const failing: DodOutcome = {
      ...dod,
      status: 'failed',
      results: [
        {
          ...dod.results[0]!,
          status: 'failed',
          exitCode: 1,
          outputTail: 'not ok 1',
          failingTests: ['joins'],
        },
        dod.results[1]!,
      ],
    };
    const report = compareEvidence(evidence, { dod: failing, criteria: [criterionCheck] });
    expect(report.allHold).toBe(false);
    expect(report.differs).toBe(1);
    expect(report.verdicts[0]).toMatchObject({
      verdict: 'differs',
      why: 'was passed (exit 0), now failed (exit 1)',
      now: { outputTail: 'not ok 1', failingTests: ['joins'] },
    });
  });

  it('does not hold when a recorded check could not run again, nor when nothing was recorded', () => {
    const report = compareEvidence(evidence, {
      dod,
      criteria: [{ ...criterionCheck, status: 'not_executable', exitCode: null, reason: 'no such file' }],
    });
    expect(report.verdicts[2]).toMatchObject({ verdict: 'not_run', counts: true });
    expect(report.allHold).toBe(false);
    expect(compareEvidence({ dod: null, criteria: [] }, { dod, criteria: [] }).allHold).toBe(false);
  });

  it('runs the recorded commands, with the configured time limit where the config has the same check', () => {
    const config = validateConfig([
      {
        source: 'test',
        values: {
          dod: {
            checks: [
              { name: 'test', command: 'npm test', timeout: '2m' },
              { name: 'x', command: 'make' },
            ],
          },
        },
      },
    ]);
    const verifying = withRecordedDod(config, evidence);
    expect(verifying.dod.checks).toEqual([
      { name: 'test', command: 'npm test', timeout: 120_000 },
      { name: 'lint', command: 'npm run lint', timeout: 600_000 },
    ]);
    expect(recordedCriteria(evidence).map((criterion) => criterion.id)).toEqual(['AC-1', 'AC-2']);
  });
});

describe('agent-runner verify without Docker', () => {
  it('exits 4 with the fix when the engine is not reachable, and 2 on a branch with no evidence', async () => {
    const repo = await createTempRepo({ 'a.txt': 'a' });
    repo.git('checkout', '-q', '-b', 'agent-runner/T1');
    const head = await repo.commit('work', { 'b.txt': 'b' });
    const env = { ...process.env, DOCKER_HOST: `unix://${repo.root}/no-docker.sock` };
    const none = await runCliCaptured(['verify', 'main'], { cwd: repo.root, env });
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/No agent-runner evidence on main/);
    await writeEvidenceNote(repo.root, head, JSON.stringify(evidenceOf(taskRecord(head), context)));
    const result = await runCliCaptured(['verify', 'T1'], { cwd: repo.root, env });
    expect(result.exitCode).toBe(4);
    expect(result.stderr).toMatch(/Docker is not reachable at unix:\/\/.*no-docker\.sock/);
  });
});
