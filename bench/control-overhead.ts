/**
 * `npm run bench:control-overhead`: what `--control` adds to one real task. The demo task (scripted model, the
 * real codex binary, real Docker) on a local git remote (a bare repository, file://), through:
 * - a plain `serve --repo file://…` (the remote's cache, no database): `POST /api/tasks` → the `end` event;
 * - a `serve --control` node on the real PostgreSQL of scripts/postgres.sh: `POST /api/tasks` with `repo`
 *   (enqueue) → the node takes it → the `end` event (served from the database, after the row says COMPLETE).
 * Both servers stay up across the runs; one uncounted run each first (the node clones its cache on its first
 * task, the plain server at its start), then runs alternate between them so the machine's load drifts over both
 * alike; `BENCH_RUNS` each (default 5), median. The database's enqueue → start (the node's poll) is shown apart.
 * Prints JSON on stdout.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { processRedaction, safeOutput } from '../src/cli/output.js';
import { startServer, type ServeOptions } from '../src/cli/serve-command.js';
import { controlUrl } from '../src/control/control-url.js';
import { openControlDatabase } from '../src/control/control-database.js';
import { migrateControl } from '../src/control/migrate-control.js';
import { Redaction } from '../src/notes/redact.js';
import { ServeClient } from '../src/serve/api-client.js';
import { createTestDatabase } from '../tests/support/control-database.js';
import { median, round } from './stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ROOT = path.join(import.meta.dirname, '..');
const DEMO = path.join(ROOT, 'examples', 'slugify');
const MODEL_SCRIPT = path.join(DEMO, 'model-script.yaml');
const PRD = readFileSync(path.join(DEMO, 'PRD.md'), 'utf8');
const progress = (message: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

/** The demo repository as a bare remote. */
function demoRemote(): string {
  const work = mkdtempSync(path.join(tmpdir(), 'agent-runner-bench-overhead-src-'));
  execFileSync('cp', ['-r', `${path.join(DEMO, 'repo')}/.`, work]);
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'ignore' });
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'add', '-A');
  git(work, '-c', 'user.name=b', '-c', 'user.email=b@e', 'commit', '-q', '-m', 'base');
  const bare = mkdtempSync(path.join(tmpdir(), 'agent-runner-bench-overhead-remote-'));
  execFileSync('git', ['clone', '-q', '--bare', work, bare]);
  rmSync(work, { recursive: true, force: true });
  return bare;
}

/** A server in its own directory and state (its own repository cache). */
async function server(name: string, options: ServeOptions) {
  const dir = mkdtempSync(path.join(tmpdir(), `agent-runner-bench-overhead-${name}-`));
  // One task at a time, as a plain serve with its default would run it too.
  writeFileSync(path.join(dir, 'agent-runner.yaml'), 'parallel:\n  max: 1\n');
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true', XDG_STATE_HOME: path.join(dir, 'state') };
  delete env.OPENAI_API_KEY;
  delete env.AGENT_RUNNER_CONTROL_URL;
  const redaction = processRedaction(env);
  const started = await startServer(
    { port: '0', modelScript: MODEL_SCRIPT, ...options },
    {
      output: safeOutput({ out: () => undefined, err: () => undefined, isTTY: false }, redaction),
      redaction,
      env,
      cwd: dir,
      setExitCode: () => undefined,
    },
  );
  return {
    client: new ServeClient(started.info.url, started.info.token),
    close: async () => {
      await started.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** POST → the stream's `end` event; the task's final state with the seconds it took. */
async function timedTask(
  client: ServeClient,
  body: Record<string, unknown>,
): Promise<{ seconds: number; state: string | null }> {
  const started = performance.now();
  const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', body);
  let state: string | null = null;
  for await (const message of client.events(taskId))
    if (message.event === 'end') state = (JSON.parse(message.data) as { state: string | null }).state;
  return { seconds: (performance.now() - started) / 1_000, state };
}

const remote = demoRemote();
const url = `file://${remote}`;
const db = await createTestDatabase();
const admin = await openControlDatabase(controlUrl(db.url, new Redaction()));
await migrateControl(admin, { nodePassword: db.nodePassword });
const plain = await server('plain', { repo: url });
// A pure node (no repository in its directory): it runs fleet tasks only.
const node = await server('node', { control: db.nodeUrl });
const times: { plain: number[]; control: number[] } = { plain: [], control: [] };
try {
  for (let run = 0; run <= RUNS; run += 1) {
    const a = await timedTask(plain.client, { prd: PRD, taskId: `OVERHEAD-PLAIN-${run}` });
    progress(`plain serve, run ${run}: ${round(a.seconds)} s, ${a.state}`);
    const b = await timedTask(node.client, { repo: url, prd: PRD, taskId: `OVERHEAD-CONTROL-${run}` });
    progress(`serve --control, run ${run}: ${round(b.seconds)} s, ${b.state}`);
    if (a.state !== 'COMPLETE' || b.state !== 'COMPLETE')
      throw new Error(`a run did not end COMPLETE (plain ${a.state}, control ${b.state})`);
    if (run === 0) continue;
    times.plain.push(a.seconds);
    times.control.push(b.seconds);
  }
  // Where the node's time goes, on the database's clock: the poll, then the task, then its end written after
  // the journal's last line (the copy of the events and the last push first).
  const { rows } = await admin.pool.query<{
    id: string;
    start: number;
    row_end: number;
    after_finished: number;
  }>(
    `SELECT t.id, extract(epoch FROM t.started_at - t.created_at) * 1000 AS start,
            extract(epoch FROM t.ended_at - t.created_at) * 1000 AS row_end,
            extract(epoch FROM t.ended_at - (agent_runner.event_json(e.line)->>'at')::timestamptz) * 1000 AS after_finished
       FROM agent_runner.tasks t
       JOIN agent_runner.events e ON e.task_id = t.id AND agent_runner.event_json(e.line)->>'type' = 'task_finished'
      WHERE t.id <> 'OVERHEAD-CONTROL-0'`,
  );
  const column = (name: 'start' | 'row_end' | 'after_finished') =>
    round(median(rows.map((row) => Number(row[name]))));
  // The row's end to the stream's `end` event a client sees (the POST's few ms before created_at included).
  const streamLags = rows.map(
    (row) =>
      (times.control[Number(row.id.split('-').at(-1)) - 1] ?? Number.NaN) * 1_000 - Number(row.row_end),
  );
  console.log(
    JSON.stringify(
      {
        runs: RUNS,
        plainSeconds: times.plain.map((value) => round(value)),
        controlSeconds: times.control.map((value) => round(value)),
        medianPlainSeconds: round(median(times.plain)),
        medianControlSeconds: round(median(times.control)),
        medianOverheadSeconds: round(median(times.control) - median(times.plain)),
        // Each control run against the plain run just before it: the load of that minute is in both.
        medianPairedOverheadSeconds: round(
          median(times.control.map((seconds, index) => seconds - (times.plain[index] ?? Number.NaN))),
        ),
        medianEnqueueToStartMs: column('start'),
        medianEnqueueToRowEndMs: column('row_end'),
        medianTaskFinishedToRowEndMs: column('after_finished'),
        medianRowEndToStreamEndMs: round(median(streamLags)),
        load: os.loadavg().map((value) => round(value)),
        cores: os.cpus().length,
      },
      null,
      2,
    ),
  );
} finally {
  await plain.close();
  await node.close();
  await admin.close();
  await db.drop();
  rmSync(remote, { recursive: true, force: true });
}
process.exit(0);
