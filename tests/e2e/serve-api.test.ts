/**
 * `agent-runner serve`'s API over real HTTP, with the real composition behind it: tasks run for real (real
 * git, a real Docker sandbox, the real codex binary) against agent-runner's own scripted model. Every route:
 * the token missing or wrong (401), bad bodies (400 naming the field), an unknown task (404); a task started
 * over the API and watched to COMPLETE by two clients at once; its events resumed after a dropped
 * connection (Last-Event-ID); an `ask_human` question answered over the API, the task going on to COMPLETE.
 * The PRD and the scripted models are files of the served repository (the API reads no other). The server's
 * memory with clients that never read is bounded in serve-api-memory.test.ts (timed: it runs alone).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionReply } from '../support/meta-replies.js';
import { parse, stringify } from 'yaml';
import { ApiError, ServeClient, readServeInfo } from '../../src/serve/api-client.js';
import { runCliCaptured } from '../support/cli.js';
import {
  DEMO_SCRIPT,
  SERVED_PRD,
  SERVED_SCRIPT,
  serveDemoRepo,
  type ServedRepo,
} from '../support/serve-repo.js';
import { taskContainers } from '../support/task-containers.js';

const QUESTION = 'Should slugify keep digits?';
const SECRET = 'SECRET-Q7W3E9R2T5Y8';
const CANARY = 'CANARY-visible-5b7e';
const demo = parse(readFileSync(DEMO_SCRIPT, 'utf8')) as { meta: string[]; worker: { run?: string }[] };

/** The demo's script with an `ask_human` decision after the plan. */
const askScript = {
  ...demo,
  meta: [
    demo.meta[0],
    decisionReply('ask_human', 'The PRD does not say what happens to digits.', QUESTION),
    ...demo.meta.slice(1),
  ],
};
/** The worker prints the secret (in its command and, built at run time, in its output) before its work. */
const terminalScript = {
  ...demo,
  worker: [
    { run: `echo "${CANARY} ${SECRET}"; printf 'SEC%s %s\\n' 'RET-Q7W3E9R2T5Y8' '${CANARY}'` },
    ...demo.worker,
  ],
};
/** The worker starts its work, then hangs. */
const hangScript = { meta: demo.meta.slice(0, 2), worker: [{ run: 'echo draft > draft.txt; sleep 600' }] };

let repo = '';
let served: ServedRepo;
let server: ServedRepo['server'];
let client: ServeClient;

beforeAll(async () => {
  served = await serveDemoRepo({
    'specs/ask.yaml': stringify(askScript),
    'specs/terminal.yaml': stringify(terminalScript),
    'specs/terminal-config.yaml': "redact:\n  patterns:\n    - 'SECRET-[A-Z0-9]{12}'\n",
    'specs/hang.yaml': stringify(hangScript),
  });
  ({ repo, server, client } = served);
}, 60_000);

afterAll(async () => {
  await served?.close();
});

/** Every event of a task until its end, as [event, id, data]. */
async function watch(
  taskId: string,
  after?: string,
): Promise<{ event: string; id?: string; data: string }[]> {
  const seen: { event: string; id?: string; data: string }[] = [];
  for await (const message of client.events(taskId, after === undefined ? {} : { after }))
    seen.push({
      event: message.event ?? 'message',
      ...(message.id ? { id: message.id } : {}),
      data: message.data,
    });
  return seen;
}

const journalTypes = (events: { event: string; data: string }[]) =>
  events
    .filter((event) => event.event === 'journal')
    .map((event) => (JSON.parse(event.data) as { type: string }).type);

describe('the server API: access and bad input', () => {
  it('writes its address and token for the CLI, readable by the user alone', async () => {
    expect(await readServeInfo(repo)).toEqual(server.info);
    expect(statSync(path.join(repo, '.agent-runner', 'serve.json')).mode & 0o777).toBe(0o600);
  });

  it('refuses a request without the token, or with a wrong one (401)', async () => {
    const bare = await fetch(`${server.info.url}/api/tasks`);
    expect(bare.status).toBe(401);
    expect(await bare.json()).toMatchObject({ error: { code: 'unauthorized' } });
    await expect(
      new ServeClient(server.info.url, 'not-the-token').request('GET', '/api/tasks'),
    ).rejects.toMatchObject({
      status: 401,
    });
    // The token as a query parameter (a browser's EventSource cannot send headers).
    expect((await fetch(`${server.info.url}/api/tasks?token=${server.info.token}`)).status).toBe(200);
  });

  it('answers a bad body with 400 naming the field, an unknown task with 404', async () => {
    const refused = async (body: unknown) => {
      const error = await client.request('POST', '/api/tasks', body).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ApiError);
      return error as ApiError;
    };
    expect(await refused({})).toMatchObject({ status: 400, field: 'prd' });
    expect(await refused({ prd: '# x', prdPath: 'PRD.md' })).toMatchObject({ status: 400, field: 'prd' });
    expect(await refused({ prd: '# x', taskId: 'no spaces allowed' })).toMatchObject({
      status: 400,
      field: 'taskId',
    });
    expect(await refused({ prd: '# x', colour: 'red' })).toMatchObject({
      status: 400,
      apiCode: 'invalid_body',
    });
    expect(await refused({ prdPath: 'PRD.md', config: { limits: { maxIterations: 'many' } } })).toMatchObject(
      {
        status: 400,
      },
    );
    const notJson = await fetch(`${server.info.url}/api/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.info.token}`, 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(notJson.status).toBe(400);
    for (const route of [
      '/api/tasks/NO-SUCH-TASK',
      '/api/tasks/NO-SUCH-TASK/events',
      '/api/tasks/NO-SUCH-TASK/note',
    ])
      await expect(client.request('GET', route)).rejects.toMatchObject({ status: 404 });
    await expect(
      client.request('POST', '/api/tasks/NO-SUCH-TASK/answer', { text: 'x' }),
    ).rejects.toMatchObject({
      status: 404,
    });
    await expect(client.request('GET', '/api/tasks/bad%20id')).rejects.toMatchObject({
      status: 400,
      field: 'id',
    });
    await expect(client.request('GET', '/api/nothing-here')).rejects.toMatchObject({ status: 404 });
  });

  it('documents every route in an OpenAPI document made from the request schemas', async () => {
    const document = await client.request<{
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    }>('GET', '/api/openapi.json');
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/api/tasks',
        '/api/tasks/{id}',
        '/api/tasks/{id}/events',
        '/api/tasks/{id}/answer',
      ]),
    );
    expect(JSON.stringify(document.paths['/api/tasks']?.post)).toContain('"prdPath"');
  });
});

describe('a task started over the API', () => {
  it('runs to COMPLETE; two clients watch it live; a dropped connection resumes after its last event', async () => {
    const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', {
      prdPath: SERVED_PRD,
      modelScript: SERVED_SCRIPT,
      taskId: 'SERVE-DEMO',
    });
    expect(taskId).toBe('SERVE-DEMO');
    const [first, second] = await Promise.all([watch(taskId), watch(taskId)]);
    expect(first.at(-1)).toMatchObject({ event: 'end' });
    expect(JSON.parse(first.at(-1)?.data ?? '{}')).toMatchObject({ state: 'COMPLETE', exitCode: 0 });
    expect(journalTypes(first)).toEqual(
      expect.arrayContaining(['task_started', 'worker_started', 'worker_finished']),
    );
    expect(second.map((event) => event.id)).toEqual(first.map((event) => event.id));
    // Ids are positions in the journal (the byte offset past each line), growing, the last one its size.
    const ids = first
      .filter((event) => event.event === 'journal')
      .map((event) => Number(/^o(\d+)\./.exec(event.id ?? '')?.[1]));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.at(-1)).toBe(statSync(path.join(repo, '.agent-runner', 'runs', taskId, 'events.jsonl')).size);

    // Reconnecting after event 3 gives event 4 on, the same as the first time.
    const resumed = await watch(taskId, first[2]?.id);
    expect(resumed[0]?.id).toBe(first[3]?.id);
    expect(resumed.map((event) => event.data)).toEqual(first.slice(3).map((event) => event.data));

    const { tasks } = await client.request<{ tasks: { taskId: string; state: string; runs: number }[] }>(
      'GET',
      '/api/tasks',
    );
    expect(tasks.find((task) => task.taskId === taskId)).toMatchObject({
      state: 'COMPLETE',
      runs: 1,
      status: 'finished',
    });
    const detail = await client.request<Record<string, unknown>>('GET', `/api/tasks/${taskId}`);
    // An ended task is the journal's: the server no longer holds it (it cannot stop it or answer for it).
    expect(detail).toMatchObject({ taskId, state: 'COMPLETE', exitCode: 0, served: false });
    expect(JSON.stringify(detail.plan)).toContain('AC-1');
    expect(JSON.stringify(detail.summary)).toContain('"state":"COMPLETE"');
    const note = await client.request<string>('GET', `/api/tasks/${taskId}/note`);
    expect(note).toContain('| **State** | **COMPLETE**');
    const diff = await client.request<string>('GET', `/api/tasks/${taskId}/diff`);
    expect(diff).toContain('+++ b/slug.js');
    // A COMPLETE task is not resumed: the reason and the fix.
    await expect(client.request('POST', `/api/tasks/${taskId}/resume`)).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('already COMPLETE'),
    });
    await expect(client.request('POST', '/api/tasks/NO-SUCH-TASK/stop')).rejects.toMatchObject({
      status: 404,
    });
    await expect(client.request('POST', '/api/tasks/NO-SUCH-TASK/resume')).rejects.toMatchObject({
      status: 404,
    });
    expect(await taskContainers(taskId, repo)).toEqual([]);
  }, 300_000);

  it('asks its question over the API; the answer sent there lets it go on to COMPLETE', async () => {
    const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', {
      prdPath: SERVED_PRD,
      modelScript: 'specs/ask.yaml',
      taskId: 'SERVE-ASK',
    });
    // A person looking at the task now and then: the question shows, and is answered there.
    const answering = (async () => {
      for (;;) {
        const task = await client.request<{ question: string | null; status: string }>(
          'GET',
          `/api/tasks/${taskId}`,
        );
        if (task.question !== null) {
          await client.request('POST', `/api/tasks/${taskId}/answer`, { text: 'Yes, keep digits.' });
          return task.question;
        }
        if (task.status === 'finished') return null;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const events = (await watch(taskId)).map((event) => event.data);
    expect(await answering).toBe(QUESTION);
    expect(JSON.parse(events.at(-1) ?? '{}')).toMatchObject({ state: 'COMPLETE' });
    const human = events
      .map((data) => JSON.parse(data) as { type?: string; answer?: string })
      .find((event) => event.type === 'human');
    expect(human).toMatchObject({ question: QUESTION, answer: 'Yes, keep digits.' });
    // Nothing is waiting any more: a second answer is refused, saying the task ended (not that it runs elsewhere).
    await expect(
      client.request('POST', `/api/tasks/${taskId}/answer`, { text: 'again' }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('has ended (COMPLETE): it has no question waiting'),
    });
    await expect(client.request('POST', `/api/tasks/${taskId}/stop`)).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('nothing to stop'),
    });
  }, 300_000);

  it('shows a task run in a terminal live, and nothing of it that is redacted', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
    delete env.OPENAI_API_KEY;
    let finished = false;
    const terminal = runCliCaptured(
      [
        'run',
        '--prd',
        SERVED_PRD,
        '--task-id',
        'TERM-RUN',
        '--model-script',
        'specs/terminal.yaml',
        '--config',
        'specs/terminal-config.yaml',
      ],
      { cwd: repo, env },
    ).then((result) => {
      finished = true;
      return result;
    });
    // The server finds it as soon as its runner holds its lock, and follows it while it does (the journal may
    // come a moment later: the stream waits for it).
    for (
      let tries = 0;
      tries < 300 &&
      (await client.request<{ status: string }>('GET', '/api/tasks/TERM-RUN').catch(() => null))?.status !==
        'running';
      tries += 1
    )
      await new Promise((resolve) => setTimeout(resolve, 100));
    let firstWhileRunning = false;
    const events: string[] = [];
    for await (const message of client.events('TERM-RUN')) {
      if (events.length === 0) firstWhileRunning = !finished;
      events.push(message.data);
    }
    const result = await terminal;
    expect(result.exitCode, result.stderr).toBe(0);
    expect(firstWhileRunning).toBe(true);
    expect(JSON.parse(events.at(-1) ?? '{}')).toMatchObject({ state: 'COMPLETE' });
    const seen = [
      ...events,
      JSON.stringify(await client.request('GET', '/api/tasks/TERM-RUN')),
      JSON.stringify(await client.request('GET', '/api/tasks')),
      await client.request<string>('GET', '/api/tasks/TERM-RUN/note'),
    ].join('\n');
    // The search can see what it looks for: the canary printed beside the secret is there.
    expect(seen).toContain(CANARY);
    expect(seen).not.toContain(SECRET);
    expect(seen).toContain('[REDACTED]');
  }, 300_000);

  it('stops a task it runs as Ctrl-C does: the work saved, the note written, exit 130', async () => {
    const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', {
      prdPath: SERVED_PRD,
      modelScript: 'specs/hang.yaml',
      taskId: 'SERVE-STOP',
    });
    const events: { event?: string; data: string }[] = [];
    for await (const message of client.events(taskId)) {
      events.push(message);
      const event = JSON.parse(message.data) as { event?: { kind?: string; command?: string } };
      if (event.event?.kind === 'command_started' && event.event.command?.includes('sleep 600'))
        expect(await client.request('POST', `/api/tasks/${taskId}/stop`)).toEqual({
          taskId,
          stop: 'stopping',
        });
    }
    expect(JSON.parse(events.at(-1)?.data ?? '{}')).toMatchObject({ state: 'NEEDS_REVIEW', exitCode: 130 });
    const note = await client.request<string>('GET', `/api/tasks/${taskId}/note`);
    expect(note).toContain('interrupted');
    expect(note).toContain(`refs/agent-runner/wip/${taskId}`);
    expect(
      execFileSync('git', ['show', `refs/agent-runner/wip/${taskId}:draft.txt`], {
        cwd: repo,
        encoding: 'utf8',
      }),
    ).toBe('draft\n');
    expect(await taskContainers(taskId, repo)).toEqual([]);
  }, 300_000);
});
