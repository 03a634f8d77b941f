/**
 * `agent-runner deliver ID` pushing a finished task's branch from the host: to a real git remote over HTTP
 * behind basic auth (git http-backend) and to a `file://` remote. Real git, real CLI, no Docker.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { resumeTaskSpec } from '../../src/compose/resume-task-spec.js';
import { readDeliveries } from '../../src/deliver/delivery-record.js';
import { noteDigest, recordedNoteDigests } from '../../src/notes/note-digest.js';
import { runCliCaptured } from '../support/cli.js';
import { createFinishedTask, type FinishedTask } from '../support/finished-task.js';
import { GitHttpRemote } from '../support/git-http-remote.js';

const TOKEN = 'ghp_deliverTestToken0123456789abcdefABCDEF';

/** Every file agent-runner wrote for the task (journal, delivery journal, note) as one text. */
function writtenText(task: FinishedTask): string {
  const files = [task.notePath, ...readdirSync(task.runDir).map((name) => path.join(task.runDir, name))];
  return files.map((file) => readFileSync(file, 'utf8')).join('\n');
}

/** Whether `text` holds the token, plainly or inside the basic-auth header git would send. */
function holdsToken(text: string): boolean {
  const basic = Buffer.from(`x-access-token:${TOKEN}`).toString('base64');
  return text.includes(TOKEN) || text.includes(basic);
}

describe('deliver: push from the host', () => {
  let remote: GitHttpRemote;
  let task: FinishedTask;
  const env = { GH_TOKEN: TOKEN, AGENT_RUNNER_DELIVER_FORGE: undefined };

  beforeEach(async () => {
    remote = await new GitHttpRemote({ user: 'x-access-token', password: TOKEN }).start();
    task = await createFinishedTask();
    await remote.createFrom('app', task.repo.root);
    task.repo.git('remote', 'add', 'origin', remote.url('app'));
    // The forge is named: the test remote's host (127.0.0.1) says nothing about it.
    await task.repo.write('agent-runner.yaml', 'deliver:\n  forge: github\n');
  });
  afterEach(async () => {
    await remote.stop();
  });

  const deliver = (...args: string[]) =>
    runCliCaptured(['deliver', task.taskId, ...args], { cwd: task.repo.root, env });

  it('pushes agent-runner/<ID> with the token as a header, and the token is in nothing it wrote', async () => {
    const journalBefore = readFileSync(path.join(task.runDir, 'events.jsonl'), 'utf8');
    const noteBefore = readFileSync(task.notePath, 'utf8');
    const result = await deliver('--json');
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(await remote.ref('app', task.branch)).toBe(task.head);
    const outcome = JSON.parse(result.stdout.trim()) as { pushed: boolean; sha: string; remote: string };
    expect(outcome).toMatchObject({
      type: 'delivery',
      pushed: true,
      sha: task.head,
      remote: remote.url('app'),
    });
    // The probe can see the token where it went: the remote received it in git's Authorization header.
    const sent = remote.requests.filter((request) => request.authorized);
    expect(sent.length).toBeGreaterThan(0);
    expect(holdsToken(sent.map((request) => request.authorization).join('\n'))).toBe(true);
    expect(holdsToken(`${result.stdout}${result.stderr}${writtenText(task)}`)).toBe(false);
    // The task's journal is as the task left it; the note gained its delivery section at the end only.
    expect(readFileSync(path.join(task.runDir, 'events.jsonl'), 'utf8')).toBe(journalBefore);
    const note = readFileSync(task.notePath, 'utf8');
    expect(note.startsWith(noteBefore.trimEnd())).toBe(true);
    expect(note).toContain(`## Delivery\n\n- Pushed \`${task.branch}\` at \`${task.head.slice(0, 12)}\``);
    // The note is still the runner's for memory: its new digest is recorded beside the delivery.
    expect(await recordedNoteDigests(task.runDir, path.basename(task.notePath))).toContain(noteDigest(note));
  });

  it('a protected branch: exit 6 with the reason and the fix; the local branch, the journal and the state stay', async () => {
    remote.protect('app', task.branch);
    const journalBefore = readFileSync(path.join(task.runDir, 'events.jsonl'), 'utf8');
    const result = await deliver();
    expect(result.exitCode).toBe(6);
    expect(result.stderr).toContain('protected branch');
    expect(result.stderr).toContain('allow pushes to agent-runner/*');
    expect(result.stderr).toContain(`agent-runner deliver ${task.taskId}`);
    expect(await remote.ref('app', task.branch)).toBeNull();
    expect(task.repo.git('rev-parse', task.branch).trim()).toBe(task.head);
    expect(readFileSync(path.join(task.runDir, 'events.jsonl'), 'utf8')).toBe(journalBefore);
    expect(readDeliveries(task.runDir).at(-1)).toMatchObject({ pushed: false, error: { kind: 'rejected' } });
    expect(readFileSync(task.notePath, 'utf8')).toContain('- Failed (rejected)');
  });

  it('a second deliver after a resume replaces the branch with a lease on what it pushed last', async () => {
    expect((await deliver()).exitCode).toBe(0);
    // A resumed task that rewrote the branch (not a fast-forward): the lease lets agent-runner replace its own.
    task.repo.git('branch', '-f', task.branch, 'main');
    const rewritten = task.addCommit('Resume: slugify again');
    const result = await deliver();
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(await remote.ref('app', task.branch)).toBe(rewritten);
    expect(readDeliveries(task.runDir).map((item) => item.sha)).toEqual([task.head, rewritten]);
  });

  it("someone else's commit on the remote branch: refused by the lease, reported, nothing overwritten", async () => {
    expect((await deliver()).exitCode).toBe(0);
    // Another person pushes to the task branch on the remote.
    const other = await createFinishedTask({ taskId: 'other-task-000001' });
    other.repo.git('fetch', '-q', remote.path('app'), `${task.branch}:refs/heads/theirs`);
    other.repo.git('checkout', '-q', 'theirs');
    const theirs = await other.repo.commit('Their change', { 'theirs.txt': 'theirs\n' });
    other.repo.git('push', '-q', remote.path('app'), `theirs:refs/heads/${task.branch}`);
    task.addCommit('Resume: more work');
    const result = await deliver();
    expect(result.exitCode).toBe(6);
    expect(result.stderr).toContain('holds a commit agent-runner did not push');
    expect(result.stderr).toContain('Nothing was overwritten');
    expect(await remote.ref('app', task.branch)).toBe(theirs);
    expect(readDeliveries(task.runDir).at(-1)?.error?.kind).toBe('stale');
  });

  it('wrong credentials: exit 6 naming the variables to set', async () => {
    const result = await runCliCaptured(['deliver', task.taskId], {
      cwd: task.repo.root,
      env: { GH_TOKEN: 'ghp_wrongToken0123456789abcdefABCDEFxyz' },
    });
    expect(result.exitCode).toBe(6);
    expect(result.stderr).toContain('GH_TOKEN or GITHUB_TOKEN');
    expect(result.stderr).not.toContain('ghp_wrongToken');
  });
});

describe('deliver: the forge the task was started with', () => {
  it('a task started with --forge github delivers with GH_TOKEN to a host that names no forge; a forge named now wins', async () => {
    const remote = await new GitHttpRemote({ user: 'x-access-token', password: TOKEN }).start();
    onTestFinished(() => remote.stop());
    // No deliver.forge anywhere: only the task's journal says github (`run --forge github`).
    const task = await createFinishedTask({ startOptions: { forge: 'github' } });
    await remote.createFrom('app', task.repo.root);
    task.repo.git('remote', 'add', 'origin', remote.url('app'));
    const env = { GH_TOKEN: TOKEN };
    const result = await runCliCaptured(['deliver', task.taskId], { cwd: task.repo.root, env });
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(await remote.ref('app', task.branch)).toBe(task.head);
    expect(remote.requests.some((request) => request.authorized)).toBe(true);
    // `--forge` given now (AGENT_RUNNER_FORGE here) wins: gitlab's token is not set, so the push has none.
    task.addCommit('Resume: more work');
    const other = await runCliCaptured(['deliver', task.taskId], {
      cwd: task.repo.root,
      env: { ...env, AGENT_RUNNER_FORGE: 'gitlab' },
    });
    expect(other.exitCode).toBe(6);
    expect(other.stderr).toContain('GITLAB_TOKEN');
  });

  it('resume takes the recorded forge unless the attempt names one', async () => {
    const task = await createFinishedTask({ state: 'NEEDS_REVIEW', startOptions: { forge: 'gitlab' } });
    const input = { repoRoot: task.repo.root, taskId: task.taskId, cwd: task.repo.root, env: {} };
    const resumed = await resumeTaskSpec({ ...input, overrides: {} });
    expect(resumed.spec.config.deliver.forge).toBe('gitlab');
    const named = await resumeTaskSpec({ ...input, overrides: { deliver: { forge: 'github' } } });
    expect(named.spec.config.deliver.forge).toBe('github');
    const plain = await createFinishedTask({ state: 'NEEDS_REVIEW' });
    const auto = await resumeTaskSpec({
      ...input,
      repoRoot: plain.repo.root,
      taskId: plain.taskId,
      overrides: {},
    });
    expect(auto.spec.config.deliver.forge).toBe('auto');
  });
});

describe('deliver: push to a file:// remote', () => {
  it('pushes without credentials; a task that is not COMPLETE is not delivered unless --draft', async () => {
    const task = await createFinishedTask({ state: 'NEEDS_REVIEW' });
    const remote = new GitHttpRemote();
    try {
      await remote.createFrom('plain', task.repo.root);
      task.repo.git('remote', 'add', 'origin', `file://${remote.path('plain')}`);
      const refused = await runCliCaptured(['deliver', task.taskId], { cwd: task.repo.root, env: {} });
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toContain('deliver.when is complete');
      expect(refused.stderr.match(/deliver\.when is complete/g)).toHaveLength(1);
      expect(await remote.ref('plain', task.branch)).toBeNull();
      // The evidence `agent-runner verify` reads goes with the branch.
      task.repo.git('notes', '--ref', 'agent-runner', 'add', '-m', 'evidence', task.head);
      const notes = task.repo.git('rev-parse', 'refs/notes/agent-runner').trim();
      const result = await runCliCaptured(['deliver', task.taskId, '--draft'], {
        cwd: task.repo.root,
        env: {},
      });
      expect(result.exitCode).toBe(0);
      expect(await remote.ref('plain', 'refs/notes/agent-runner')).toBe(notes);
      expect(result.stdout).toContain(`Pushed:   ${task.branch}`);
      expect(await remote.ref('plain', task.branch)).toBe(task.head);
    } finally {
      await remote.stop();
    }
  });

  it('an unreachable remote: exit 6 with the reason, the task untouched', async () => {
    const task = await createFinishedTask();
    // Port 9 (discard) on the loopback: nothing listens, the connection is refused at once.
    task.repo.git('remote', 'add', 'origin', 'http://127.0.0.1:9/acme/app.git');
    const journalBefore = readFileSync(path.join(task.runDir, 'events.jsonl'), 'utf8');
    const result = await runCliCaptured(['deliver', task.taskId], { cwd: task.repo.root, env: {} });
    expect(result.exitCode).toBe(6);
    expect(result.stderr).toContain('did not go through');
    expect(result.stderr).toContain('Check the remote');
    expect(readDeliveries(task.runDir).at(-1)?.error?.kind).toBe('unreachable');
    expect(readFileSync(path.join(task.runDir, 'events.jsonl'), 'utf8')).toBe(journalBefore);
    expect(task.repo.git('rev-parse', task.branch).trim()).toBe(task.head);
  });

  it('no such remote: one message naming deliver.remote, exit 6', async () => {
    const task = await createFinishedTask();
    const result = await runCliCaptured(['deliver', task.taskId], { cwd: task.repo.root, env: {} });
    expect(result.exitCode).toBe(6);
    expect(result.stderr).toContain('has no remote "origin"');
    expect(result.stderr).toContain('deliver.remote');
    // The failure is said once, on stderr, and nothing else is (no summary line repeats it).
    expect(result.stderr.match(/has no remote "origin"/g)).toHaveLength(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stdout).toBe('');
    // With --json the outcome is the object on stdout, and stderr says the failure once.
    const json = await runCliCaptured(['deliver', task.taskId, '--json'], { cwd: task.repo.root, env: {} });
    expect(json.exitCode).toBe(6);
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ type: 'delivery', error: { kind: 'no_remote' } });
    expect(json.stderr.match(/has no remote "origin"/g)).toHaveLength(1);
  });
});
