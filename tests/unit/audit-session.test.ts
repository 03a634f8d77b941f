/**
 * The audit log of a scripted session on a real server (the same HTTP stack as `serve`, a real repository,
 * the real board and journal writer): tokens created with `agent-runner token create`, then alice (operator)
 * starts a task, answers its question, stops it, resumes it, and root (admin) stops it again. Every change is
 * in the audit log (the API's and `agent-runner audit`'s) with who, which role and from where, and in the
 * task's journal (after the runner's own `task_started`, which stays first), and on the task's detail. No token
 * appears anywhere: the state directory's files, the command's outputs, the audit, the error answers; the
 * probe first proves it finds a planted token.
 *
 * The composition behind the board is a stand-in (as tests/unit/task-board-queue.test.ts does): a task that
 * journals its start with the real journal writer, asks one question, and runs until it is stopped. A real
 * task on the page is in tests/e2e/web-view.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { TaskSpec, TaskHooks } from '../../src/compose/task-spec.js';
import type { StampedEvent } from '../../src/core/events.js';
import type { TaskSummary } from '../../src/core/types.js';
import { EventJournal } from '../../src/notes/event-journal.js';
import { Redaction } from '../../src/notes/redact.js';
import { taskLayout } from '../../src/workspace/layout.js';
import { runCliCaptured } from '../support/cli.js';
import { cliArgs } from '../support/cli-bundle.js';
import { filesUnder } from '../support/files-under.js';
import { createNodeRepo } from '../support/task-repo.js';
import { call, startTokenServer, type TokenServer } from '../support/token-server.js';

const QUESTION = 'Should slugify keep digits?';
let repo: { root: string; remove: () => void };
let server: TokenServer;
const outputs: string[] = [];

/** A composition that journals like the runner (the hook first, then the journal), asks, and waits for a stop. */
function askingApp(): App {
  return {
    // The audit lines a server writes into a journal pass the process's redaction point, as the runner's do.
    host: { redaction: new Redaction() },
    run: async (spec: TaskSpec, hooks: TaskHooks = {}) => {
      const journal = new EventJournal(taskLayout(spec.repoRoot, spec.taskId).runDir);
      const record = (event: StampedEvent) => {
        hooks.onEvent?.(event);
        journal.append(event);
      };
      record({
        type: 'task_started',
        taskId: spec.taskId,
        branch: `agent-runner/${spec.taskId}`,
        baseSha: '0'.repeat(40),
        worktreePath: spec.repoRoot,
        dirtyStart: false,
        options: { prdPath: spec.prdPath, prd: spec.prd, dodSkipped: spec.dodSkipped },
        at: new Date().toISOString(),
      });
      if (spec.start.kind === 'new') {
        const answer = (await hooks.human?.ask(QUESTION)) ?? null;
        record({ type: 'human', question: QUESTION, answer, at: new Date().toISOString() });
      }
      await new Promise<void>((resolve) => {
        if (hooks.signal?.aborted) resolve();
        hooks.signal?.addEventListener('abort', () => resolve());
      });
      return { taskId: spec.taskId, state: 'NEEDS_REVIEW', exitCode: 130 } as TaskSummary;
    },
  } as unknown as App;
}

async function cli(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const result = await runCliCaptured(argv, {
    cwd: repo.root,
    env: { PATH: process.env.PATH, HOME: repo.root, ...env },
  });
  outputs.push(result.stdout, result.stderr);
  return result;
}

async function until<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  repo = createNodeRepo();
  server = await startTokenServer(repo.root, { app: askingApp() });
});

afterAll(async () => {
  await server?.close();
  repo?.remove();
});

it('records who started, answered, stopped and resumed a task, from where, in the audit log and its journal; no token anywhere', async () => {
  // The first one with the CLI as a process of its own (bundled as the package bundles it: the store's writes
  // must work there too), the others in-process.
  const alice = spawnSync(
    process.execPath,
    cliArgs(['token', 'create', '--name', 'alice', '--role', 'operator']),
    {
      cwd: repo.root,
      env: { PATH: process.env.PATH, HOME: repo.root },
      encoding: 'utf8',
    },
  );
  outputs.push(alice.stdout, alice.stderr);
  expect(alice.status, alice.stderr).toBe(0);
  const aliceToken = alice.stdout.trim();
  expect(aliceToken).toMatch(/^art_[0-9a-f]{12}_/);
  const root = await cli(['token', 'create', '--name', 'root', '--role', 'admin']);
  const rootToken = root.stdout.trim();
  const viewer = await cli(['token', 'create', '--name', 'vic', '--role', 'viewer']);
  const viewerToken = viewer.stdout.trim();
  expect(
    [root.exitCode, viewer.exitCode, rootToken, viewerToken].join(' '),
    root.stderr + viewer.stderr,
  ).toMatch(/^0 0 art_\S+ art_\S+$/);

  const taskId = 'AUD-1';
  const started = await call(server.url, 'POST', '/api/tasks', aliceToken, { prdPath: 'PRD.md', taskId });
  expect(started).toMatchObject({ status: 202, body: { taskId } });
  await until(async () => {
    const detail = await call(server.url, 'GET', `/api/tasks/${taskId}`, viewerToken);
    return detail.body?.question === QUESTION ? true : undefined;
  }, 'the question');
  // A viewer may look, not act: refused, and the refusal is audited as who tried.
  const refused = await call(server.url, 'POST', `/api/tasks/${taskId}/answer`, viewerToken, { text: 'no' });
  expect(refused.status).toBe(403);
  expect(
    (await call(server.url, 'POST', `/api/tasks/${taskId}/answer`, aliceToken, { text: 'Yes, keep digits.' }))
      .status,
  ).toBe(202);
  expect((await call(server.url, 'POST', `/api/tasks/${taskId}/stop`, aliceToken)).status).toBe(202);
  await server.board.settled(taskId);
  expect((await call(server.url, 'POST', `/api/tasks/${taskId}/resume`, aliceToken)).status).toBe(202);
  const journalFile = path.join(taskLayout(repo.root, taskId).runDir, 'events.jsonl');
  const journal = () =>
    readFileSync(journalFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as StampedEvent);
  await until(
    async () => (journal().filter((event) => event.type === 'task_started').length === 2 ? true : undefined),
    'the second attempt',
  );
  expect((await call(server.url, 'POST', `/api/tasks/${taskId}/stop`, rootToken)).status).toBe(202);
  await server.board.settled(taskId);

  // The audit log: every change, with who, which role, from where, and how it was answered.
  const audit = await call(server.url, 'GET', '/api/audit', rootToken);
  const entries = (audit.body?.entries ?? []) as Record<string, unknown>[];
  const local = { from: 'cli', status: 200, actor: { name: expect.stringMatching(/^cli:/), role: 'admin' } };
  const by = (name: string, role: string) => ({ actor: { name, role }, from: '127.0.0.1', taskId });
  expect(entries).toEqual([
    { ...local, action: 'token.create', tokenName: 'alice', at: expect.any(String) },
    { ...local, action: 'token.create', tokenName: 'root', at: expect.any(String) },
    { ...local, action: 'token.create', tokenName: 'vic', at: expect.any(String) },
    { ...by('alice', 'operator'), action: 'task.start', status: 202, at: expect.any(String) },
    { ...by('vic', 'viewer'), action: 'task.answer', status: 403, at: expect.any(String) },
    { ...by('alice', 'operator'), action: 'task.answer', status: 202, at: expect.any(String) },
    { ...by('alice', 'operator'), action: 'task.stop', status: 202, at: expect.any(String) },
    { ...by('alice', 'operator'), action: 'task.resume', status: 202, at: expect.any(String) },
    { ...by('root', 'admin'), action: 'task.stop', status: 202, at: expect.any(String) },
  ]);
  // The same log from the command, and a viewer may not read it.
  const printed = await cli(['audit', '--json']);
  expect(
    printed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown),
  ).toEqual(entries);
  expect((await cli(['audit', '--since', '1h'])).stdout).toContain('task.resume');
  expect((await call(server.url, 'GET', '/api/audit', viewerToken)).status).toBe(403);
  // Through a server's API (--server, the token in AGENT_RUNNER_TOKEN): an admin reads, a viewer is refused.
  const remote = await cli(['audit', '--json', '--server', server.url], { AGENT_RUNNER_TOKEN: rootToken });
  expect(remote.stdout).toBe(printed.stdout);
  const refusedList = await cli(['token', 'list', '--server', server.url], {
    AGENT_RUNNER_TOKEN: viewerToken,
  });
  expect(refusedList.exitCode).toBe(2);
  expect(refusedList.stderr).toContain('GET /api/tokens needs the admin role; the token vic has viewer');

  // The task's journal: the runner's start stays first; each change that went through follows, in order.
  const events = journal();
  expect(events[0]?.type).toBe('task_started');
  const audited = events.filter((event) => event.type === 'audit');
  expect(audited.map((event) => [event.action, event.actor.name, event.from, event.status])).toEqual([
    ['task.start', 'alice', '127.0.0.1', 202],
    ['task.answer', 'alice', '127.0.0.1', 202],
    ['task.stop', 'alice', '127.0.0.1', 202],
    ['task.resume', 'alice', '127.0.0.1', 202],
    ['task.stop', 'root', '127.0.0.1', 202],
  ]);
  // The resume's entry waited for the second attempt's start.
  const secondStart = events.findIndex((event, index) => index > 0 && event.type === 'task_started');
  expect(
    events.findIndex((event) => event.type === 'audit' && event.action === 'task.resume'),
  ).toBeGreaterThan(secondStart);
  const detail = await call(server.url, 'GET', `/api/tasks/${taskId}`, viewerToken);
  expect((detail.body?.audit as { action: string }[]).map((entry) => entry.action)).toEqual([
    'task.start',
    'task.answer',
    'task.stop',
    'task.resume',
    'task.stop',
  ]);

  // Revoked: refused at once; the list shows when, never the token.
  expect((await cli(['token', 'revoke', 'alice'])).exitCode).toBe(0);
  const afterRevoke = await call(server.url, 'GET', '/api/tasks', aliceToken);
  expect(afterRevoke.status).toBe(401);
  const list = await cli(['token', 'list', '--json']);
  expect(JSON.parse(list.stdout)).toMatchObject({
    tokens: [
      { name: 'alice', role: 'operator', revokedAt: expect.any(String), lastUsedAt: expect.any(String) },
      { name: 'root', role: 'admin', revokedAt: null },
      { name: 'vic', role: 'viewer', revokedAt: null },
    ],
  });
  const answers = [refused.text, afterRevoke.text, audit.text, detail.text];

  // The probe: every file of the state directory, every output, every answer above, the server's warnings.
  const stateDir = path.join(repo.root, '.agent-runner');
  // Each token whole, and its secret alone (what follows `art_<id>_`; the secret may hold `_` itself).
  const secrets = [aliceToken, rootToken, viewerToken].flatMap((token) => [token, token.slice(17)]);
  const leaks = () =>
    [
      ...filesUnder(stateDir).map(({ file, text }) => ({ where: file, text })),
      ...[...outputs.slice(6), ...answers, ...server.warnings].map((text, index) => ({
        where: `output ${index}`,
        text,
      })),
    ]
      .filter(({ text }) => secrets.some((secret) => text.includes(secret)))
      .map(({ where }) => where);
  // It sees a token planted where it looks (a file of the state directory, then one of the answers).
  const planted = path.join(stateDir, 'runs', taskId, 'planted.txt');
  writeFileSync(planted, `x ${aliceToken.slice(17)} y`);
  expect(leaks()).toEqual([planted]);
  rmSync(planted);
  answers.push(`{"echo":"${rootToken}"}`);
  expect(leaks()).toEqual([`output ${outputs.length - 6 + answers.length - 1}`]);
  answers.pop();
  expect(leaks()).toEqual([]);
  // The token creation's own output is the one place each token is shown, once.
  expect(outputs.slice(0, 6).join('\n').split(aliceToken)).toHaveLength(2);
});
