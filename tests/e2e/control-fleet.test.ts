/**
 * Two `serve --control` nodes on one real PostgreSQL (scripts/postgres.sh), each in this process on a free
 * port, with the demo's scripted model, the real codex binary and real Docker sandboxes: two tasks queued over
 * node A's API on a file:// remote are taken one by each node (capacity 1: parallel.max) and all end COMPLETE,
 * each row naming its node, every journal line in agent_runner.events. The URL's password shows in no output.
 * Node B is a pure node (started in a directory that is no git repository): it takes fleet tasks, and a local
 * task (no `repo`) is refused saying so, over the API and on its page. Node A's page, in headless Chromium, lists a task running on node B
 * with B's node id, opens it and shows its events arriving until it ends.
 *
 * PostgreSQL (a server of the test's own) stopped for 10 s mid-task: the task goes on, the node says so, and no
 * event is lost.
 *
 * Answer and stop across the fleet: a task on one node asks its question (ask_human), shown by the other node
 * (its list, the task's detail, `logs`, its page in headless Chromium), answered through it (`agent-runner
 * answer --server`), and ends COMPLETE; another is stopped through the other node (`agent-runner stop
 * --server`) and ends as a local stop ends it, its container gone. Their Meta-agent reply holds a lone
 * surrogate and the worker prints a NUL and bytes that are not UTF-8: every line still reaches the database.
 *
 * The remote's branches, the lease, kill -9 and the resume: tests/e2e/control-fleet-survive.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { processRedaction, safeOutput } from '../../src/cli/output.js';
import {
  SERVER_TOKEN_VARIABLE,
  answerCommand,
  logsCommand,
  stopCommand,
  waitCommand,
} from '../../src/cli/client-commands.js';
import { startServer } from '../../src/cli/serve-command.js';
import { controlUrl } from '../../src/control/control-url.js';
import { openControlDatabase } from '../../src/control/control-database.js';
import { migrateControl } from '../../src/control/migrate-control.js';
import { Redaction } from '../../src/notes/redact.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { ServeClient } from '../../src/serve/api-client.js';
import {
  createMigratedDatabase,
  createTestDatabase,
  privatePostgres,
  type TestDatabase,
} from '../support/control-database.js';
import { DEMO_PRD, ROOT, createDemoRepo } from '../support/demo-task.js';
import { DEMO_SCRIPT } from '../support/serve-repo.js';
import { decisionReply } from '../support/meta-replies.js';
import { commitProjectFileAndMemory, occurrences } from '../support/memory-fixture.js';
import { parse, stringify } from 'yaml';

let db: TestDatabase;
const cleanups: (() => Promise<void> | void)[] = [];
/** Every node's log: a queued task goes to whichever node is free. */
const nodeLogs: string[][] = [];

beforeAll(async () => {
  db = await createMigratedDatabase();
}, 600_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await db?.drop();
});

/**
 * A node: a server started in its own (demo) repository, its own repository cache; a pure node in a directory
 * that is no repository (its agent-runner.yaml gives the capacity). `control`: its database.
 */
async function startNode(
  name: string,
  {
    kind = 'repository',
    control = db.nodeUrl,
    modelScript = DEMO_SCRIPT,
    capacity = 2,
  }: { kind?: 'repository' | 'pure'; control?: string; modelScript?: string; capacity?: number } = {},
) {
  const config = `parallel:\n  max: ${capacity}\n`;
  const { dir, remove } = kind === 'pure' ? emptyDirectory(name, config) : createDemoRepo(config);
  const state = mkdtempSync(path.join(tmpdir(), `ar-node-${name}-`));
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true', XDG_STATE_HOME: state };
  delete env.OPENAI_API_KEY;
  delete env.AGENT_RUNNER_CONTROL_URL;
  const redaction = processRedaction(env);
  const log: string[] = [];
  nodeLogs.push(log);
  const server = await startServer(
    { port: '0', control, modelScript },
    {
      output: safeOutput({ out: (t) => log.push(t), err: (t) => log.push(t), isTTY: false }, redaction),
      redaction,
      env,
      cwd: dir,
      setExitCode: () => undefined,
    },
  );
  cleanups.push(async () => {
    await server.close();
    remove();
    rmSync(state, { recursive: true, force: true });
  });
  return { server, log, dir, env, redaction, client: new ServeClient(server.info.url, server.info.token) };
}

/**
 * The input items of the first request codex sent in task `taskId` (on whichever node ran it): the first
 * `response_item` lines of its session record in the task's run directory, under the node's state directory.
 */
function codexFirstInput(nodes: { env: NodeJS.ProcessEnv }[], taskId: string): string {
  for (const node of nodes) {
    const found = execFileSync(
      'find',
      [
        node.env.XDG_STATE_HOME ?? '',
        '-path',
        `*/runs/${taskId}/codex-home/sessions/*`,
        '-name',
        'rollout-*.jsonl',
      ],
      { encoding: 'utf8' },
    )
      .trim()
      .split('\n')
      .filter((file) => file !== '')
      .sort();
    const first = found[0];
    if (first === undefined) continue;
    const lines = readFileSync(first, 'utf8').split('\n');
    // The items before the model's first answer: the instructions and the prompt.
    const items: string[] = [];
    for (const line of lines) {
      if (line.includes('"type":"function_call"') || line.includes('"role":"assistant"')) break;
      if (line.includes('"type":"response_item"')) items.push(line);
    }
    return items.join('\n');
  }
  throw new Error(`No codex session record of ${taskId} on any node`);
}

function emptyDirectory(name: string, config: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), `ar-pure-node-${name}-`));
  writeFileSync(path.join(dir, 'agent-runner.yaml'), config);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

it(
  "two nodes of capacity 1 (B a pure node) run two queued tasks, one each, all COMPLETE; A's page shows B's task live",
  async () => {
    const { dir: source, remove } = createDemoRepo('');
    // The memory bank, committed on the remote only: a node reads it from its clone of the remote.
    const memory = commitProjectFileAndMemory(source, 'AGENTS.md');
    const bare = mkdtempSync(path.join(tmpdir(), 'ar-fleet-remote-'));
    execFileSync('git', ['clone', '-q', '--bare', source, bare]);
    remove();
    cleanups.push(() => rmSync(bare, { recursive: true, force: true }));

    const a = await startNode('a', { capacity: 1 });
    const b = await startNode('b', { kind: 'pure', capacity: 1 });
    const prd = readFileSync(DEMO_PRD, 'utf8');
    // The pure node: a task that needs a local repository is refused, saying how to queue it instead.
    await expect(b.client.request('POST', '/api/tasks', { prd })).rejects.toThrow(
      /This node has no repository .*Give `repo`/,
    );
    expect(existsSync(path.join(b.dir, '.agent-runner'))).toBe(false);
    const reader = new pg.Client({ connectionString: db.url });
    // The next test stops PostgreSQL: the connection's end is expected then.
    reader.on('error', () => undefined);
    await reader.connect();
    cleanups.push(() => reader.end());

    // The page is open before the tasks are queued: it follows B's task from its first minute.
    await pageShowsTaskOfB(a, b, reader, async () => {
      for (const n of [1, 2]) {
        const answer = await a.client.request<{ taskId: string; queued: boolean }>('POST', '/api/tasks', {
          repo: `file://${bare}`,
          prd,
          taskId: `FLEET-E2E-${n}`,
        });
        expect(answer).toEqual({ taskId: `FLEET-E2E-${n}`, queued: true });
      }
    });
    const rows = async () =>
      (
        await reader.query<{ id: string; state: string; node_id: string; ended_at: Date | null }>(
          'SELECT id, state, node_id, ended_at FROM agent_runner.tasks ORDER BY id',
        )
      ).rows;
    const deadline = Date.now() + 15 * 60_000;
    while ((await rows()).some((row) => row.ended_at === null) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 2_000));

    const ended = await rows();
    expect(
      ended.map((row) => [row.id, row.state]),
      [...a.log, ...b.log].join('\n'),
    ).toEqual([1, 2].map((n) => [`FLEET-E2E-${n}`, 'COMPLETE']));
    const perNode = new Map<string, number>();
    for (const row of ended) perNode.set(row.node_id, (perNode.get(row.node_id) ?? 0) + 1);
    expect([...perNode.values()]).toEqual([1, 1]);
    expect([...a.log, ...b.log].join('\n')).not.toContain(db.nodePassword);

    // Each task's worker got the entry committed on the remote, after the project's AGENTS.md, in its first
    // request's input (as codex's own session record under the node's state directory holds it).
    for (const row of ended) {
      const firstInput = codexFirstInput([a, b], row.id);
      expect(occurrences(firstInput, memory.project)).toBe(1);
      expect(firstInput.indexOf(memory.project)).toBeLessThan(firstInput.indexOf(memory.active));
      expect(firstInput).not.toContain(memory.archived);
    }

    // Node A's list holds node B's tasks too, each with its node.
    const listed = await a.client.request<{
      fleet: { taskId: string; state: string; node: { id: string } }[];
    }>('GET', '/api/tasks');
    expect(listed.fleet.map((task) => [task.taskId, task.state, task.node.id]).sort()).toEqual(
      ended.map((row) => [row.id, 'COMPLETE', row.node_id]).sort(),
    );
    expect(new Set(listed.fleet.map((task) => task.node.id)).size).toBe(2);
    // The pure node lists nothing of its own, and the fleet's tasks as any node does.
    const listedOnB = await b.client.request<{ tasks: unknown[]; fleet: { taskId: string }[] }>(
      'GET',
      '/api/tasks',
    );
    expect(listedOnB.tasks).toEqual([]);
    expect(listedOnB.fleet.map((task) => task.taskId).sort()).toEqual(ended.map((row) => row.id));

    // Every journal line of every task is in the database, in order, from the start to task_finished.
    const events = await reader.query<{ task_id: string; seqs: number[]; types: string[] }>(
      `SELECT task_id, array_agg(seq ORDER BY seq) AS seqs, array_agg(agent_runner.event_json(line)->>'type' ORDER BY seq) AS types
       FROM agent_runner.events GROUP BY task_id ORDER BY task_id`,
    );
    expect(events.rows.map((row) => row.task_id)).toEqual([1, 2].map((n) => `FLEET-E2E-${n}`));
    for (const row of events.rows) {
      expect(row.seqs).toEqual(row.seqs.map((_, index) => index + 1));
      expect(row.types).toContain('task_started');
      expect(row.types.at(-1)).toBe('task_finished');
    }

    // Any node serves any task of the fleet from the database: its detail, and its event stream with the
    // same ids as the journal's lines, ending with the task's state (what `wait`, `logs` and the page read).
    for (const row of events.rows)
      for (const node of [a, b]) {
        const detail = await node.client.request<{ state: string; node: { id: string } }>(
          'GET',
          `/api/tasks/${row.task_id}`,
        );
        expect(detail.state).toBe('COMPLETE');
        const streamed: { id?: string; event?: string; data: string }[] = [];
        for await (const message of node.client.events(row.task_id)) streamed.push(message);
        // The ids are the events table's seqs (`l<seq>.<tag>`).
        expect(
          streamed.filter((m) => m.event === 'journal').map((m) => Number(/^l(\d+)\./.exec(m.id ?? '')?.[1])),
        ).toEqual(row.seqs);
        expect(JSON.parse(streamed.at(-1)?.data ?? '{}')).toMatchObject({ state: 'COMPLETE' });
      }

    // `wait` in node A's repository (through its server) waits for every task of the fleet, B's included.
    const waited: string[] = [];
    let exitCode: number | undefined;
    await waitCommand(
      events.rows.map((row) => row.task_id),
      { json: true },
      {
        output: safeOutput({ out: (t) => waited.push(t), err: () => undefined, isTTY: false }, a.redaction),
        redaction: a.redaction,
        env: a.env,
        cwd: a.dir,
        setExitCode: (code) => {
          exitCode = code;
        },
      },
    );
    expect(waited.map((line) => JSON.parse(line) as { state: string; exitCode: number })).toEqual(
      events.rows.map((row) => ({ type: 'summary', taskId: row.task_id, state: 'COMPLETE', exitCode: 0 })),
    );
    expect(exitCode).toBe(0);
  },
  20 * 60_000,
);

it('a server outside any repository and without a control database says so', async () => {
  const { dir, remove } = emptyDirectory('plain', '');
  cleanups.push(remove);
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
  delete env.AGENT_RUNNER_CONTROL_URL;
  const redaction = processRedaction(env);
  const context = {
    output: safeOutput({ out: () => undefined, err: () => undefined, isTTY: false }, redaction),
    redaction,
    env,
    cwd: dir,
    setExitCode: () => undefined,
  };
  await expect(startServer({ port: '0' }, context)).rejects.toThrow(/is not inside a git repository/);
  expect(existsSync(path.join(dir, '.agent-runner'))).toBe(false);
});

it(
  'PostgreSQL stopped for 10 s mid-task: the task ends COMPLETE and no event is lost',
  async () => {
    const { dir: source, remove } = createDemoRepo('');
    const bare = mkdtempSync(path.join(tmpdir(), 'ar-fleet-remote-'));
    execFileSync('git', ['clone', '-q', '--bare', source, bare]);
    remove();
    cleanups.push(() => rmSync(bare, { recursive: true, force: true }));
    // A server of this test's own: the files running beside it use the shared one.
    const cluster = await privatePostgres();
    cleanups.push(() => cluster.remove());
    const own = await createTestDatabase(cluster.adminUrl);
    const admin = await openControlDatabase(controlUrl(own.url, new Redaction()));
    await migrateControl(admin, { nodePassword: own.nodePassword });
    await admin.close();
    const node = await startNode('c', { control: own.nodeUrl });
    const logs = () => nodeLogs.flat().join('\n');
    await node.client.request('POST', '/api/tasks', {
      repo: `file://${bare}`,
      prd: readFileSync(DEMO_PRD, 'utf8'),
      taskId: 'FLEET-OUTAGE',
    });
    const connect = async () => {
      const client = new pg.Client({ connectionString: own.url });
      client.on('error', () => undefined);
      await client.connect();
      cleanups.push(() => client.end().catch(() => undefined));
      return client;
    };
    let reader = await connect();
    const count = async () =>
      Number(
        (await reader.query(`SELECT count(*) AS n FROM agent_runner.events WHERE task_id = 'FLEET-OUTAGE'`))
          .rows[0]?.n,
      );
    const deadline = Date.now() + 10 * 60_000;
    while ((await count()) < 2 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await count()).toBeGreaterThanOrEqual(2);

    await cluster.stop();
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    await cluster.start();
    reader = await connect();

    const ended = async () =>
      (
        await reader.query(
          `SELECT state FROM agent_runner.tasks WHERE id = 'FLEET-OUTAGE' AND ended_at IS NOT NULL`,
        )
      ).rows[0] as { state: string } | undefined;
    while ((await ended()) === undefined && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    // The node's next heartbeat after the restart (every 5 s) says the database is back.
    const backBy = Date.now() + 30_000;
    while (
      !(logs().includes('reachable again') && logs().includes('FLEET-OUTAGE: events written again')) &&
      Date.now() < backBy
    )
      await new Promise((resolve) => setTimeout(resolve, 500));
    const log = logs();
    expect(await ended(), log).toEqual({ state: 'COMPLETE' });
    // The probe: the node saw the database go and come back (else this test proves nothing).
    expect(log).toContain('control database unreachable');
    expect(log).toContain('control database reachable again');
    expect(log).toContain('FLEET-OUTAGE: events written again');
    const events = await reader.query<{ seqs: number[]; types: string[] }>(
      `SELECT array_agg(seq ORDER BY seq) AS seqs, array_agg(agent_runner.event_json(line)->>'type' ORDER BY seq) AS types
       FROM agent_runner.events WHERE task_id = 'FLEET-OUTAGE'`,
    );
    const row = events.rows[0];
    expect(row?.seqs).toEqual(row?.seqs.map((_, index) => index + 1));
    expect(row?.types.at(-1)).toBe('task_finished');
  },
  20 * 60_000,
);

/**
 * Node A's page (headless Chromium) lists a task that runs on node B with B's node id, opens it, and shows its
 * events arriving through A's `/events` stream until it ends: the COMPLETE transition is not yet in the
 * database when the page has opened the task, and shows on the page later.
 */
async function pageShowsTaskOfB(
  a: Awaited<ReturnType<typeof startNode>>,
  b: Awaited<ReturnType<typeof startNode>>,
  reader: pg.Client,
  enqueue: () => Promise<void>,
): Promise<void> {
  const started = Date.now();
  const executablePath = execFileSync('bash', [path.join(ROOT, 'scripts', 'ensure-chromium.sh')], {
    encoding: 'utf8',
  }).trim();
  // As root, Chromium's own sandbox cannot start; the page is ours, served from this machine.
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  cleanups.push(() => browser.close());
  const nodeB = (
    await reader.query<{ id: string }>('SELECT id FROM agent_runner.nodes WHERE url = $1', [
      b.server.info.url,
    ])
  ).rows[0]?.id;
  expect(nodeB).toBeDefined();
  // The pure node's page: its start form takes a remote's URL, and a task without one gets the node's answer.
  const pageOfB = await browser.newPage();
  await pageOfB.goto(`${b.server.info.url}/?token=${b.server.info.token}`);
  await pageOfB.locator('#start-repo:not([hidden])').waitFor({ timeout: 15_000 });
  await pageOfB.locator('#start-form textarea').fill('# A task\n\nNeeds a repository.');
  await pageOfB.locator('#start-form button').click();
  await pageOfB.locator('#start-form .error', { hasText: 'This node has no repository' }).waitFor();
  await pageOfB.close();
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  await page.goto(`${a.server.info.url}/?token=${a.server.info.token}`);
  await page.locator('#board').waitFor();
  await enqueue();
  // The first task B takes shows on A's board with B's node id (the board asks every second).
  const firstOfB = page.locator(`#board tr[data-node="${nodeB}"]`).first();
  await firstOfB.waitFor({ timeout: 5 * 60_000 });
  const taskId = await firstOfB.getAttribute('data-task');
  expect(taskId).toMatch(/^FLEET-E2E-/);
  const row = page.locator(`#board tr[data-task="${taskId}"]`);
  await expect(row.locator('td.node').textContent()).resolves.toBe(nodeB);
  // Listed once: a task of the fleet is one row.
  for (const id of await page
    .locator('#board tr[data-task]')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-task'))))
    expect(await page.locator(`#board tr[data-task="${id}"]`).count()).toBe(1);

  await row.locator('a').click();
  await page.locator(`#task-node[data-node="${nodeB}"]`).waitFor({ timeout: 15_000 });
  await page.locator('#timeline li').first().waitFor({ timeout: 15_000 });
  const completeInDatabase = async () =>
    Number(
      (
        await reader.query(
          `SELECT count(*) AS n FROM agent_runner.events
            WHERE task_id = $1 AND agent_runner.event_json(line)->>'type' = 'transition' AND agent_runner.event_json(line)->>'to' = 'COMPLETE'`,
          [taskId],
        )
      ).rows[0]?.n,
    );
  // The probe: the end is still to come, so what follows arrives live.
  expect(await completeInDatabase()).toBe(0);
  const openedAt = Date.now();
  await page.locator('#timeline li[data-state="COMPLETE"]').waitFor({ timeout: 10 * 60_000 });
  expect(await completeInDatabase()).toBe(1);
  // The end event: the header shows the row's final state; the worker's commands arrived with their exits.
  await page.locator('#task-header .state[data-state="COMPLETE"]').waitFor({ timeout: 15_000 });
  expect(await page.locator('#runs li.command').count()).toBeGreaterThan(0);
  expect(await page.locator('#criteria li[data-criterion]').count()).toBeGreaterThan(0);
  // Its note and diff stay on B: the page says where.
  expect(await page.locator('#note').textContent()).toContain(`On node ${nodeB}`);
  expect(problems).toEqual([]);
  console.log(
    `page of node A: ${taskId} on node B followed live for ${Math.round((Date.now() - openedAt) / 1000)} s ` +
      `(browser work ${Math.round((Date.now() - started) / 1000)} s, mostly the task running)`,
  );
  await page.close();
}

it(
  'answer and stop through one node reach a task on the other: answered, it ends COMPLETE; stopped, it ends as a local stop, its container gone',
  async () => {
    // A fleet of its own (the nodes above run the plain demo): both nodes ask before their first worker run.
    const fleet = await createTestDatabase();
    cleanups.push(() => fleet.drop());
    const admin = await openControlDatabase(controlUrl(fleet.url, new Redaction()));
    await migrateControl(admin, { nodePassword: fleet.nodePassword });
    await admin.close();
    const question = 'Should slugify keep digits?';
    const demo = parse(readFileSync(DEMO_SCRIPT, 'utf8')) as { meta: string[]; worker: unknown[] };
    const scripts = mkdtempSync(path.join(tmpdir(), 'ar-fleet-ask-'));
    cleanups.push(() => rmSync(scripts, { recursive: true, force: true }));
    const askScript = path.join(scripts, 'ask.yaml');
    writeFileSync(
      askScript,
      stringify({
        ...demo,
        // A lone surrogate in the Meta-agent's reply, a NUL and bytes that are not UTF-8 in the worker's output:
        // lines jsonb refused (the copy stuck, the task's row stayed RUNNING and `wait` hung).
        meta: [demo.meta[0], decisionReply('ask_human', 'Digits? \ud800', question), ...demo.meta.slice(1)],
        worker: [
          ...demo.worker.slice(0, 2),
          { run: "cat /proc/1/cmdline; printf 'caf\\377\\n'" },
          ...demo.worker.slice(2),
        ],
      }),
    );
    const { dir: source, remove } = createDemoRepo('');
    const bare = mkdtempSync(path.join(tmpdir(), 'ar-fleet-remote-'));
    execFileSync('git', ['clone', '-q', '--bare', source, bare]);
    remove();
    cleanups.push(() => rmSync(bare, { recursive: true, force: true }));
    const nodes = [
      await startNode('d', { control: fleet.nodeUrl, modelScript: askScript }),
      await startNode('e', { control: fleet.nodeUrl, modelScript: askScript }),
    ];
    const started = Date.now();
    const prd = readFileSync(DEMO_PRD, 'utf8');
    for (const taskId of ['FLEET-ASK', 'FLEET-STOP'])
      await nodes[0]?.client.request('POST', '/api/tasks', { repo: `file://${bare}`, prd, taskId });

    const reader = new pg.Client({ connectionString: fleet.url });
    await reader.connect();
    cleanups.push(() => reader.end());
    /** The node that does not run the task, once it asks (its decision in the fleet's events). */
    const otherThanRunner = async (taskId: string) => {
      const deadline = Date.now() + 5 * 60_000;
      while (Date.now() < deadline) {
        const { rows } = await reader.query<{ url: string | null; asked: boolean }>(
          // The row's question: its decision's line holds a lone surrogate, which jsonb cannot read.
          `SELECT n.url, t.question IS NOT NULL AS asked
             FROM agent_runner.tasks t LEFT JOIN agent_runner.nodes n ON n.id = t.node_id WHERE t.id = $1`,
          [taskId],
        );
        const row = rows[0];
        if (row?.asked && row.url !== null) {
          const runner = nodes.find((node) => node.server.info.url === row.url);
          const other = nodes.find((node) => node !== runner);
          if (runner === undefined || other === undefined) throw new Error(`no node at ${row.url}`);
          return other;
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      throw new Error(`${taskId} asked nothing within 5 minutes:\n${nodeLogs.flat().join('\n')}`);
    };
    /** `agent-runner <command> --server <the other node>`, in a directory of no repository of its own. */
    const cli = (node: (typeof nodes)[number]) => {
      const out: string[] = [];
      const err: string[] = [];
      let exitCode: number | undefined;
      const env = { ...node.env, [SERVER_TOKEN_VARIABLE]: node.server.info.token };
      const context = {
        output: safeOutput(
          { out: (t: string) => out.push(t), err: (t: string) => err.push(t), isTTY: false },
          node.redaction,
        ),
        redaction: node.redaction,
        env,
        cwd: tmpdir(),
        setExitCode: (code: number) => {
          exitCode = code;
        },
      };
      return { context, out, err, server: { server: node.server.info.url }, exitCode: () => exitCode };
    };

    const [answerVia, stopVia] = await Promise.all([
      otherThanRunner('FLEET-ASK'),
      otherThanRunner('FLEET-STOP'),
    ]);
    // The question, seen from the node that does not run the task: its list, the task's detail, `logs`, the page.
    const listed = await answerVia.client.request<{ fleet: { taskId: string; question: string | null }[] }>(
      'GET',
      '/api/tasks',
    );
    expect(listed.fleet.find((task) => task.taskId === 'FLEET-ASK')).toMatchObject({ question });
    expect(await answerVia.client.request('GET', '/api/tasks/FLEET-ASK')).toMatchObject({
      fleet: true,
      question,
    });
    const waitingLogs = cli(answerVia);
    await logsCommand('FLEET-ASK', { ...waitingLogs.server }, waitingLogs.context);
    expect(waitingLogs.out.join('\n')).toContain(`waiting for an answer: ${question}`);
    await questionOnPage(answerVia, 'FLEET-ASK', question);
    const answering = cli(answerVia);
    await answerCommand('FLEET-ASK', 'Yes, keep digits.', answering.context, answering.server);
    expect(answering.err.join('\n')).toMatch(/answered FLEET-ASK \(sent to node .+, which runs it\)/);
    // The probe: the task waiting on its question has its sandbox up (so the check below can see one).
    const docker = createDockerClient();
    const containers = (all: boolean) =>
      docker.listContainers({ all, filters: { label: ['agent-runner.task=FLEET-STOP'] } });
    expect((await containers(false)).length).toBeGreaterThanOrEqual(1);
    const stopping = cli(stopVia);
    await stopCommand('FLEET-STOP', stopping.server, stopping.context);
    expect(stopping.err.join('\n')).toMatch(/stop of FLEET-STOP sent to node .+, which runs it/);

    // `wait` and `logs` through the node that runs neither... or either: any node serves the fleet's tasks.
    const waiting = cli(answerVia);
    await waitCommand(['FLEET-ASK', 'FLEET-STOP'], { json: true, ...waiting.server }, waiting.context);
    const summaries = waiting.out.map(
      (line) => JSON.parse(line) as { taskId: string; state: string; exitCode: number },
    );
    expect(summaries, nodeLogs.flat().join('\n')).toEqual([
      { type: 'summary', taskId: 'FLEET-ASK', state: 'COMPLETE', exitCode: 0 },
      // As a local stop of a task waiting on its question: nobody answers, the task goes to its note for review.
      { type: 'summary', taskId: 'FLEET-STOP', state: 'NEEDS_REVIEW', exitCode: 3 },
    ]);
    expect(waiting.exitCode()).toBe(3);
    const logs = cli(stopVia);
    await logsCommand('FLEET-ASK', { ...logs.server }, logs.context);
    expect(logs.out.join('\n')).toContain(question);

    // The answer reached the task as given; the stopped one was told nobody answers.
    const human = await reader.query<{ task_id: string; answer: string | null }>(
      `SELECT task_id, agent_runner.event_json(line)->>'answer' AS answer FROM agent_runner.events WHERE agent_runner.event_json(line)->>'type' = 'human' ORDER BY task_id`,
    );
    expect(human.rows).toEqual([
      { task_id: 'FLEET-ASK', answer: 'Yes, keep digits.' },
      { task_id: 'FLEET-STOP', answer: null },
    ]);
    // Every line of both tasks reached the database, the lines jsonb refused included (the probes: a NUL's and
    // a lone surrogate's escape are there), and no question waits once they ended.
    const lines = await reader.query<{ task_id: string; seqs: number[]; lines: string[] }>(
      `SELECT task_id, array_agg(seq ORDER BY seq) AS seqs, array_agg(line ORDER BY seq) AS lines
         FROM agent_runner.events GROUP BY task_id ORDER BY task_id`,
    );
    for (const row of lines.rows) {
      expect(row.seqs).toEqual(row.seqs.map((_, index) => index + 1));
      expect(row.lines.at(-1)).toContain('"type":"task_finished"');
      expect(row.lines.some((line) => line.includes('\\ud800'))).toBe(true);
    }
    expect(
      lines.rows.find((row) => row.task_id === 'FLEET-ASK')?.lines.some((line) => line.includes('\\u0000')),
    ).toBe(true);
    const questions = await reader.query(`SELECT id FROM agent_runner.tasks WHERE question IS NOT NULL`);
    expect(questions.rows).toEqual([]);
    // Who asked, in each task's journal (written by the node that runs it, copied to the database) and in the
    // fleet's audit log (written by the node that was asked), with the node and the caller's address.
    const audited = await reader.query<{ task_id: string; action: string; actor: string; origin: string }>(
      `SELECT task_id, e->>'action' AS action, e->'actor'->>'name' AS actor, e->>'from' AS origin
         FROM (SELECT task_id, agent_runner.event_json(line) AS e FROM agent_runner.events) lines
        WHERE e->>'type' = 'audit' ORDER BY task_id`,
    );
    expect(audited.rows).toEqual([
      { task_id: 'FLEET-ASK', action: 'task.answer', actor: 'server', origin: '127.0.0.1' },
      { task_id: 'FLEET-STOP', action: 'task.stop', actor: 'server', origin: '127.0.0.1' },
    ]);
    const log = await reader.query<{
      action: string;
      task_id: string;
      node_id: string | null;
      status: number;
    }>(`SELECT action, task_id, node_id, status FROM agent_runner.audit ORDER BY id`);
    expect(log.rows).toEqual([
      { action: 'task.queue', task_id: 'FLEET-ASK', node_id: expect.any(String), status: 202 },
      { action: 'task.queue', task_id: 'FLEET-STOP', node_id: expect.any(String), status: 202 },
      { action: 'task.answer', task_id: 'FLEET-ASK', node_id: expect.any(String), status: 202 },
      { action: 'task.stop', task_id: 'FLEET-STOP', node_id: expect.any(String), status: 202 },
    ]);
    // Nothing of the stopped task is left on its node.
    expect(await containers(true)).toEqual([]);
    // The answer's text is the user's input to the task, in no node's log.
    expect(nodeLogs.flat().join('\n')).not.toContain('Yes, keep digits.');
    console.log(`answer and stop across the fleet: ${Math.round((Date.now() - started) / 1000)} s`);
  },
  20 * 60_000,
);

/** The page of a node that does not run the task: its board says a question waits, the task's page asks it. */
async function questionOnPage(
  node: Awaited<ReturnType<typeof startNode>>,
  taskId: string,
  question: string,
): Promise<void> {
  const executablePath = execFileSync('bash', [path.join(ROOT, 'scripts', 'ensure-chromium.sh')], {
    encoding: 'utf8',
  }).trim();
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage();
    await page.goto(`${node.server.info.url}/?token=${node.server.info.token}`);
    const row = page.locator(`#board tr[data-task="${taskId}"]`);
    await row.locator('td', { hasText: 'question waiting' }).waitFor({ timeout: 15_000 });
    await row.locator('a').click();
    await page.locator('#question', { hasText: question }).waitFor({ timeout: 15_000 });
  } finally {
    await browser.close();
  }
}
