/**
 * Tasks that survive losing their machine (issue 36): `serve --control` nodes as real processes of the built
 * CLI on one real PostgreSQL, the real codex binary in real Docker sandboxes, scripted models, a git remote
 * over HTTP with basic auth (tests/support/git-http-remote.ts; each node has the credential in its own git
 * credential store, the queue holds the URL without it), a 10 s lease (AGENT_RUNNER_CONTROL_LEASE_SECONDS).
 *
 * 1. Three nodes, nine queued tasks: all COMPLETE, spread over the three nodes, every branch on the remote
 *    (pushed by the nodes after their worker runs), every journal line in the database.
 * 2. A node killed with -9 while it runs two tasks, each in its second worker run after a first one that
 *    committed: two other nodes resume both after the lease expires, both end COMPLETE with the first commit
 *    kept under the second on the remote's branch, each lease generation's events come from one node, and the
 *    killed node, started again, removes its orphaned containers and runs neither task again.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { controlUrl } from '../../src/control/control-url.js';
import { openControlDatabase, type ControlDatabase } from '../../src/control/control-database.js';
import { migrateControl } from '../../src/control/migrate-control.js';
import { enqueueTask, startQueueClient } from '../../src/control/task-queue.js';
import { Redaction } from '../../src/notes/redact.js';
import { createTestDatabase, type TestDatabase } from '../support/control-database.js';
import { DEMO_PRD, ROOT, createDemoRepo } from '../support/demo-task.js';
import { GitHttpRemote } from '../support/git-http-remote.js';
import { DEMO_SCRIPT } from '../support/serve-repo.js';

const CLI = path.join(ROOT, 'bin', 'agent-runner.js');
const KILLED_SCRIPT = path.join(ROOT, 'tests', 'fixtures', 'fleet', 'killed-node-script.yaml');
const RESUMING_SCRIPT = path.join(ROOT, 'tests', 'fixtures', 'fleet', 'resuming-node-script.yaml');
const LEASE_SECONDS = 10;

let db: TestDatabase;
let reader: pg.Client;
let queue: ControlDatabase;
let remote: GitHttpRemote;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const admin = await openControlDatabase(controlUrl(db.url, new Redaction()));
  await migrateControl(admin, { nodePassword: db.nodePassword });
  await admin.close();
  reader = new pg.Client({ connectionString: db.url });
  await reader.connect();
  queue = await openControlDatabase(controlUrl(db.nodeUrl, new Redaction()));
  remote = await new GitHttpRemote().start();
}, 600_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await remote?.stop();
  await queue?.close();
  await reader?.end();
  await db?.drop();
});

interface NodeProcess {
  child: ChildProcess;
  log: string[];
  state: string;
  dir: string;
}

/** A node process of the built CLI in its own demo repository (parallel.max 2) with its own repository cache. */
function startNode(name: string, script: string, reuse?: { state: string; dir: string }): NodeProcess {
  const dir = reuse?.dir ?? createDemoRepo('parallel:\n  max: 2\n').dir;
  const state = reuse?.state ?? mkdtempSync(path.join(tmpdir(), `ar-survive-${name}-`));
  // The node's own credential for the remote: git's credential store in its config home.
  const configHome = path.join(state, 'config');
  mkdirSync(path.join(configHome, 'git'), { recursive: true });
  writeFileSync(path.join(configHome, 'git', 'config'), '[credential]\n\thelper = store\n');
  const origin = new URL(remote.url('x'));
  writeFileSync(
    path.join(configHome, 'git', 'credentials'),
    `${origin.protocol}//${remote.user}:${remote.password}@${origin.host}\n`,
    { mode: 0o600 },
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CI: 'true',
    XDG_STATE_HOME: state,
    XDG_CONFIG_HOME: configHome,
    AGENT_RUNNER_CONTROL_LEASE_SECONDS: String(LEASE_SECONDS),
  };
  delete env.OPENAI_API_KEY;
  delete env.AGENT_RUNNER_CONTROL_URL;
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--control', db.nodeUrl, '--port', '0', '--model-script', script],
    { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const log: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => log.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => log.push(chunk.toString()));
  const node = { child, log, state, dir };
  if (reuse === undefined)
    cleanups.push(async () => {
      await stopNode(node);
      rmSync(dir, { recursive: true, force: true });
      rmSync(state, { recursive: true, force: true });
    });
  return node;
}

async function stopNode(node: NodeProcess): Promise<void> {
  if (node.child.exitCode !== null || node.child.signalCode !== null) return;
  const exited = new Promise((resolve) => node.child.once('exit', resolve));
  node.child.kill('SIGTERM');
  const timer = setTimeout(() => node.child.kill('SIGKILL'), 60_000);
  await exited;
  clearTimeout(timer);
}

async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

/** A repository of the remote made from the demo; returns its name. */
async function remoteRepository(name: string): Promise<string> {
  const { dir: source, remove } = createDemoRepo('');
  await remote.createFrom(name, source);
  remove();
  return name;
}

async function enqueue(repo: string, taskIds: string[]): Promise<void> {
  const boss = await startQueueClient(queue);
  const prd = readFileSync(DEMO_PRD, 'utf8');
  for (const taskId of taskIds) await enqueueTask(queue, boss, { taskId, repoUrl: remote.url(repo), prd });
  await boss.stop({ graceful: false, wait: true });
}

async function taskRows(prefix: string) {
  return (
    await reader.query<{ id: string; state: string; node_id: string; lease_generation: number }>(
      `SELECT id, state, node_id, lease_generation FROM agent_runner.tasks WHERE id LIKE $1 ORDER BY id`,
      [`${prefix}%`],
    )
  ).rows;
}

function remoteLog(repo: string, taskId: string): string[] {
  return execFileSync('git', ['-C', remote.path(repo), 'log', '--format=%s', `agent-runner/${taskId}`], {
    encoding: 'utf8',
  })
    .trim()
    .split('\n');
}

it(
  'three nodes run nine queued tasks: all COMPLETE, spread over the three, every branch on the remote',
  async () => {
    const repo = await remoteRepository('fleet/nine');
    const nodes = ['a', 'b', 'c'].map((name) => startNode(name, DEMO_SCRIPT));
    const ids = Array.from({ length: 9 }, (_, n) => `SURVIVE-${n + 1}`);
    await enqueue(repo, ids);
    const logs = () => nodes.map((node) => node.log.join('')).join('\n');
    await until(
      async () =>
        (await taskRows('SURVIVE-')).every((row) =>
          ['COMPLETE', 'FAILED', 'NEEDS_REVIEW'].includes(row.state),
        ),
      15 * 60_000,
      'nine tasks to end',
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${logs()}`);
    });
    const rows = await taskRows('SURVIVE-');
    expect(
      rows.map((row) => [row.id, row.state]),
      logs(),
    ).toEqual(ids.map((id) => [id, 'COMPLETE']));
    expect(new Set(rows.map((row) => row.node_id)).size).toBe(3);
    for (const id of ids) expect(remoteLog(repo, id)[0]).toBe('Add slugify with tests');
    const events = await reader.query<{ task_id: string; seqs: number[]; types: string[] }>(
      `SELECT task_id, array_agg(seq ORDER BY seq) AS seqs, array_agg(agent_runner.event_json(line)->>'type' ORDER BY seq) AS types
         FROM agent_runner.events WHERE task_id LIKE 'SURVIVE-%' GROUP BY task_id ORDER BY task_id`,
    );
    expect(events.rows.map((row) => row.task_id)).toEqual(ids);
    for (const row of events.rows) {
      expect(row.seqs).toEqual(row.seqs.map((_, index) => index + 1));
      expect(row.types.at(-1)).toBe('task_finished');
    }
    // The branches came over HTTP with each node's own credential; the credential is in no event.
    expect(
      remote.requests.some(
        (r) => r.method === 'POST' && r.target.includes('git-receive-pack') && r.authorized,
      ),
    ).toBe(true);
    const leaked = await reader.query(`SELECT 1 FROM agent_runner.events WHERE strpos(line, $1) > 0`, [
      remote.password,
    ]);
    expect(leaked.rowCount).toBe(0);
    for (const node of nodes) await stopNode(node);
  },
  20 * 60_000,
);

it(
  'a node killed with -9 while it runs two tasks: both resumed elsewhere, COMPLETE, commits kept, no orphan',
  async () => {
    const repo = await remoteRepository('fleet/killed');
    const killed = startNode('killed', KILLED_SCRIPT);
    const ids = ['KILLED-1', 'KILLED-2'];
    await enqueue(repo, ids);
    const logs = (...nodes: NodeProcess[]) => nodes.map((node) => node.log.join('')).join('\n');
    // Both tasks in their second worker run (sleeping), their first run's commit pushed to the remote.
    const inSecondRun = async () => {
      const { rows } = await reader.query<{ n: string }>(
        `SELECT count(*) AS n FROM agent_runner.events
          WHERE task_id = ANY($1) AND agent_runner.event_json(line)->>'type' = 'worker_started' AND agent_runner.event_json(line)->>'run' = '2'`,
        [ids],
      );
      return Number(rows[0]?.n) === 2;
    };
    await until(inSecondRun, 10 * 60_000, 'two tasks in their second run').catch((error: Error) => {
      throw new Error(`${error.message}\n${logs(killed)}`);
    });
    for (const id of ids) expect(remoteLog(repo, id)[0]).toBe('Add slugify with tests');
    const killedNode = (await taskRows('KILLED-'))[0]?.node_id;
    killed.child.kill('SIGKILL');
    await new Promise((resolve) => killed.child.once('exit', resolve));

    const resumers = [startNode('r1', RESUMING_SCRIPT), startNode('r2', RESUMING_SCRIPT)];
    await until(
      async () =>
        (await taskRows('KILLED-')).every((row) =>
          ['COMPLETE', 'FAILED', 'NEEDS_REVIEW'].includes(row.state),
        ),
      10 * 60_000,
      'the resumed tasks to end',
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${logs(...resumers)}`);
    });
    const rows = await taskRows('KILLED-');
    expect(
      rows.map((row) => [row.id, row.state, row.lease_generation]),
      logs(...resumers),
    ).toEqual(ids.map((id) => [id, 'COMPLETE', 2]));
    for (const row of rows) expect(row.node_id).not.toBe(killedNode);
    // The first commit, made on the killed node, is kept under the resumed attempt's.
    for (const id of ids)
      expect(remoteLog(repo, id).slice(0, 2)).toEqual(['Add a changelog', 'Add slugify with tests']);
    // One node per lease generation: the killed node's lines under 1, another node's under 2.
    const generations = await reader.query<{ task_id: string; lease_generation: number; nodes: string[] }>(
      `SELECT task_id, lease_generation, array_agg(DISTINCT node_id) AS nodes FROM agent_runner.events
        WHERE task_id = ANY($1) GROUP BY task_id, lease_generation ORDER BY task_id, lease_generation`,
      [ids],
    );
    for (const id of ids) {
      const mine = generations.rows.filter((row) => row.task_id === id);
      expect(mine.map((row) => [row.lease_generation, row.nodes.length])).toEqual([
        [1, 1],
        [2, 1],
      ]);
      expect(mine[0]?.nodes).toEqual([killedNode]);
      expect(mine[1]?.nodes[0]).not.toBe(killedNode);
    }

    // The probe first: the killed node's containers are there (a kill -9 leaves them).
    const containers = () =>
      execFileSync(
        'docker',
        ['ps', '-a', '--format', '{{.Label "agent-runner.repo"}}', '--filter', 'label=agent-runner.task'],
        { encoding: 'utf8' },
      )
        .split('\n')
        .filter((repo) => repo.startsWith(killed.state));
    expect(containers().length).toBe(2);
    // And the disk caps its runner mounted (loop devices) are still mounted.
    const mounts = () =>
      readFileSync('/proc/mounts', 'utf8')
        .split('\n')
        .filter((line) => line.split(' ')[1]?.startsWith(killed.state));
    const mountedBefore = mounts().length;
    const back = startNode('killed', KILLED_SCRIPT, { state: killed.state, dir: killed.dir });
    cleanups.push(async () => {
      await stopNode(back);
      rmSync(killed.dir, { recursive: true, force: true });
      rmSync(killed.state, { recursive: true, force: true });
    });
    await until(async () => containers().length === 0, 60_000, 'the orphans to go').catch((error: Error) => {
      throw new Error(`${error.message}\n${logs(back)}`);
    });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    if (mountedBefore > 0) expect(mounts()).toEqual([]);
    expect(logs(back)).not.toContain('taken');
    expect((await taskRows('KILLED-')).map((row) => row.lease_generation)).toEqual([2, 2]);
    for (const node of [...resumers, back]) await stopNode(node);
  },
  20 * 60_000,
);
