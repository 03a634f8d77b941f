/**
 * `agent-runner serve`'s API over real HTTP, with the real composition behind it: tasks run for real (real
 * git, a real Docker sandbox, the real codex binary) against agent-runner's own scripted model. Every route:
 * the token missing or wrong (401), bad bodies (400 naming the field), an unknown task (404); a task started
 * over the API and watched to COMPLETE by two clients at once; its events resumed after a dropped
 * connection (Last-Event-ID); an `ask_human` question answered over the API, the task going on to COMPLETE.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { connect } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { safeOutput, processRedaction } from '../../src/cli/output.js';
import { startServer } from '../../src/cli/serve-command.js';
import { ApiError, ServeClient, readServeInfo } from '../../src/serve/api-client.js';
import { runCliCaptured } from '../support/cli.js';
import { DEMO_PRD, ROOT, createDemoRepo } from '../support/demo-task.js';
import { taskContainers } from '../support/task-containers.js';

const DEMO_SCRIPT = path.join(ROOT, 'examples', 'slugify', 'model-script.yaml');

let repo = '';
let removeRepo = () => undefined as void;
let server: Awaited<ReturnType<typeof startServer>>;
let client: ServeClient;

beforeAll(async () => {
  ({ dir: repo, remove: removeRepo } = createDemoRepo(''));
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
  delete env.OPENAI_API_KEY;
  const redaction = processRedaction(env);
  const lines: string[] = [];
  server = await startServer(
    { port: '0' },
    {
      output: safeOutput(
        { out: (text) => lines.push(text), err: (text) => lines.push(text), isTTY: false },
        redaction,
      ),
      redaction,
      env,
      cwd: repo,
      setExitCode: () => undefined,
    },
  );
  client = new ServeClient(server.info.url, server.info.token);
}, 60_000);

afterAll(async () => {
  await server?.close();
  removeRepo();
});

/** Every event of a task until its end, as [event, id, data]. */
async function watch(taskId: string, after = 0): Promise<{ event: string; id?: string; data: string }[]> {
  const seen: { event: string; id?: string; data: string }[] = [];
  for await (const message of client.events(taskId, { after }))
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
      prdPath: DEMO_PRD,
      modelScript: DEMO_SCRIPT,
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
    // Ids are the journal's lines, in order, from 1.
    const ids = first.filter((event) => event.event === 'journal').map((event) => Number(event.id));
    expect(ids).toEqual(ids.map((_, index) => index + 1));

    // Reconnecting after event 3 gives event 4 on, the same as the first time.
    const resumed = await watch(taskId, 3);
    expect(resumed[0]?.id).toBe('4');
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
    expect(detail).toMatchObject({ taskId, state: 'COMPLETE', exitCode: 0, served: true });
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
    const script = parse(readFileSync(DEMO_SCRIPT, 'utf8')) as { meta: string[]; worker: unknown[] };
    const question = 'Should slugify keep digits?';
    script.meta.splice(
      1,
      0,
      [
        'type: next_action',
        'version: 1',
        'payload:',
        '  decision:',
        '    action: ask_human',
        '    reason: The PRD does not say what happens to digits.',
        '  used_patterns: []',
        `  question: ${question}`,
      ].join('\n'),
    );
    const scriptFile = `${repo}-ask.yaml`;
    writeFileSync(scriptFile, stringify(script));
    const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', {
      prdPath: DEMO_PRD,
      modelScript: scriptFile,
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
    expect(await answering).toBe(question);
    expect(JSON.parse(events.at(-1) ?? '{}')).toMatchObject({ state: 'COMPLETE' });
    const human = events
      .map((data) => JSON.parse(data) as { type?: string; answer?: string })
      .find((event) => event.type === 'human');
    expect(human).toMatchObject({ question, answer: 'Yes, keep digits.' });
    // Nothing is waiting any more: a second answer is refused.
    await expect(
      client.request('POST', `/api/tasks/${taskId}/answer`, { text: 'again' }),
    ).rejects.toMatchObject({
      status: 400,
    });
  }, 300_000);

  it('shows a task run in a terminal live, and nothing of it that is redacted', async () => {
    const secret = 'SECRET-Q7W3E9R2T5Y8';
    const canary = 'CANARY-visible-5b7e';
    const demo = parse(readFileSync(DEMO_SCRIPT, 'utf8')) as { meta: string[]; worker: { run?: string }[] };
    const scriptFile = `${repo}-terminal.yaml`;
    // The worker prints the secret (in its command and, built at run time, in its output) before its work.
    writeFileSync(
      scriptFile,
      stringify({
        ...demo,
        worker: [
          { run: `echo "${canary} ${secret}"; printf 'SEC%s %s\\n' 'RET-Q7W3E9R2T5Y8' '${canary}'` },
          ...demo.worker,
        ],
      }),
    );
    const configFile = `${repo}-terminal-config.yaml`;
    writeFileSync(configFile, "redact:\n  patterns:\n    - 'SECRET-[A-Z0-9]{12}'\n");
    const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
    delete env.OPENAI_API_KEY;
    let finished = false;
    const terminal = runCliCaptured(
      [
        'run',
        '--prd',
        DEMO_PRD,
        '--task-id',
        'TERM-RUN',
        '--model-script',
        scriptFile,
        '--config',
        configFile,
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
    expect(seen).toContain(canary);
    expect(seen).not.toContain(secret);
    expect(seen).toContain('[REDACTED]');
  }, 300_000);

  it("keeps its memory bounded when clients never read a long journal's events", async () => {
    // 100 MB of journal: served whole into memory, five such watchers would add 500 MB.
    const runDir = path.join(repo, '.agent-runner', 'runs', 'BIG-JOURNAL');
    mkdirSync(runDir, { recursive: true });
    const line = `${JSON.stringify({ type: 'worker_event', run: 1, event: { kind: 'message', text: 'x'.repeat(1000) }, at: '2026-01-01T00:00:00.000Z' })}\n`;
    writeFileSync(path.join(runDir, 'events.jsonl'), line.repeat(Math.ceil((100 * 1024 ** 2) / line.length)));
    const { port } = new URL(server.info.url);
    const before = process.memoryUsage().rss;
    const sockets = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const socket = connect(Number(port), '127.0.0.1');
        await once(socket, 'connect');
        // It asks, then never reads a byte: the kernel's buffers fill and the server must wait.
        socket.pause();
        socket.write(
          `GET /api/tasks/BIG-JOURNAL/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.info.token}\r\n\r\n`,
        );
        return socket;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const grown = process.memoryUsage().rss - before;
    // The server still answers meanwhile.
    expect((await client.request<{ openapi: string }>('GET', '/api/openapi.json')).openapi).toBe('3.1.0');
    for (const socket of sockets) socket.destroy();
    rmSync(runDir, { recursive: true, force: true });
    expect(grown / 1024 ** 2).toBeLessThan(100);
  }, 60_000);

  it('stops a task it runs as Ctrl-C does: the work saved, the note written, exit 130', async () => {
    const demo = parse(readFileSync(DEMO_SCRIPT, 'utf8')) as { meta: string[] };
    const scriptFile = `${repo}-hang.yaml`;
    writeFileSync(
      scriptFile,
      stringify({ meta: demo.meta.slice(0, 2), worker: [{ run: 'echo draft > draft.txt; sleep 600' }] }),
    );
    const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', {
      prdPath: DEMO_PRD,
      modelScript: scriptFile,
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
