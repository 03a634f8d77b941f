/**
 * `npm run bench:serve`: the server's numbers, measured with the real server over real HTTP.
 * 1. The board with 200 tasks in the journal directory: `GET /api/tasks` and the page (goal: under 1 s). The
 *    journals are copies of one real demo task's journal, each under its own id.
 * 2. Event latency from the journal to an SSE client: lines appended to the journal of a running task (its
 *    lock held by this process), each stamped, received by a client (goal: under 100 ms).
 * 3. The server's memory with 8 running tasks and 10 clients watching them (the demo task, scripted model,
 *    real Docker and codex): the server process's peak RSS.
 * Prints the rows as JSON on stdout; progress on stderr.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { processRedaction, safeOutput } from '../src/cli/output.js';
import { startServer } from '../src/cli/serve-command.js';
import { acquireTaskLock } from '../src/lifecycle/task-lock.js';
import { ServeClient } from '../src/serve/api-client.js';
import { runMain } from './run-main.js';
import { peakRssFromKernel, resetKernelPeak } from './memory.js';

const ROOT = path.join(import.meta.dirname, '..');
const DEMO = path.join(ROOT, 'examples', 'slugify');
const progress = (message: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

/** The PRD and the scripted model as a client names them: the API reads only files of the served repository. */
const PRD = 'specs/PRD.md';
const MODEL_SCRIPT = 'specs/model-script.yaml';

function demoRepository(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-runner-bench-serve-'));
  cpSync(path.join(DEMO, 'repo'), dir, { recursive: true });
  mkdirSync(path.join(dir, 'specs'));
  cpSync(path.join(DEMO, 'PRD.md'), path.join(dir, PRD));
  cpSync(path.join(DEMO, 'model-script.yaml'), path.join(dir, MODEL_SCRIPT));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('-c', 'user.name=b', '-c', 'user.email=b@e', 'commit', '-q', '-m', 'base');
  return dir;
}

async function server(repo: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
  delete env.OPENAI_API_KEY;
  const redaction = processRedaction(env);
  const started = await startServer(
    { port: '0' },
    {
      output: safeOutput({ out: () => undefined, err: () => undefined, isTTY: false }, redaction),
      redaction,
      env,
      cwd: repo,
      setExitCode: () => undefined,
    },
  );
  return { ...started, client: new ServeClient(started.info.url, started.info.token) };
}

async function watchToEnd(client: ServeClient, taskId: string): Promise<void> {
  for await (const event of client.events(taskId)) void event;
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await work();
  return [value, performance.now() - started];
}

async function main(): Promise<void> {
  const repo = demoRepository();
  const running = await server(repo);
  const rows: Record<string, unknown>[] = [];
  try {
    // One real task: its journal is the template of the 200.
    progress('one demo task, for a real journal');
    const { taskId } = await running.client.request<{ taskId: string }>('POST', '/api/tasks', {
      prdPath: PRD,
      modelScript: MODEL_SCRIPT,
      taskId: 'BENCH-TEMPLATE',
    });
    await watchToEnd(running.client, taskId);
    const runs = path.join(repo, '.agent-runner', 'runs');
    const journal = readFileSync(path.join(runs, taskId, 'events.jsonl'), 'utf8');
    for (let index = 1; index < 200; index += 1) {
      const id = `BENCH-${String(index).padStart(3, '0')}`;
      mkdirSync(path.join(runs, id), { recursive: true });
      writeFileSync(path.join(runs, id, 'events.jsonl'), journal.replaceAll(taskId, id));
    }
    progress(`${readdirSync(runs).length} tasks in the journal directory`);
    const board: number[] = [];
    for (let round = 0; round < 5; round += 1) {
      const [listed, ms] = await timed(() =>
        running.client.request<{ tasks: unknown[] }>('GET', '/api/tasks'),
      );
      if (listed.tasks.length < 200) throw new Error(`the board listed ${listed.tasks.length} tasks`);
      board.push(ms);
    }
    const [, pageMs] = await timed(async () => {
      for (const file of ['/', '/app.js', '/app.css'])
        await (await fetch(`${running.info.url}${file}`)).arrayBuffer();
    });
    rows.push({
      section: 'board, 200 tasks',
      apiTasksMs: board.map(Math.round),
      pageMs: Math.round(pageMs),
      goalMs: 1000,
    });

    // Latency: a running task (this process holds its lock) whose journal grows while a client watches.
    const live = 'BENCH-LIVE';
    const liveDir = path.join(runs, live);
    const lock = acquireTaskLock(liveDir, { taskId: live, command: 'bench' });
    const lines = journal.trim().split('\n');
    writeFileSync(path.join(liveDir, 'events.jsonl'), `${lines[0]?.replaceAll(taskId, live)}\n`);
    const latencies: number[] = [];
    const aborter = new AbortController();
    const sentAt = new Map<number, number>();
    const watching = (async () => {
      for await (const message of running.client.events(live, { signal: aborter.signal })) {
        const id = Number(message.id);
        const sent = sentAt.get(id);
        if (sent !== undefined) latencies.push(performance.now() - sent);
        if (latencies.length >= 50) aborter.abort();
      }
    })().catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (let index = 0; index < 50; index += 1) {
      sentAt.set(index + 2, performance.now());
      appendFileSync(
        path.join(liveDir, 'events.jsonl'),
        `${lines[1 + (index % (lines.length - 2))]?.replaceAll(taskId, live)}\n`,
      );
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    await watching;
    lock.release();
    latencies.sort((a, b) => a - b);
    rows.push({
      section: 'journal → SSE client latency',
      events: latencies.length,
      medianMs: Math.round(latencies[Math.floor(latencies.length / 2)] ?? -1),
      p95Ms: Math.round(latencies[Math.floor(latencies.length * 0.95)] ?? -1),
      maxMs: Math.round(latencies.at(-1) ?? -1),
      goalMs: 100,
    });

    // Memory: 8 running tasks, 10 clients watching (this process is the server).
    progress('8 demo tasks at once, 10 watching clients');
    resetKernelPeak();
    const ids = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        running.client
          .request<{ taskId: string }>('POST', '/api/tasks', {
            prdPath: PRD,
            modelScript: MODEL_SCRIPT,
            taskId: `BENCH-MEM-${index}`,
          })
          .then((answer) => answer.taskId),
      ),
    );
    const [, wallMs] = await timed(() =>
      Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          watchToEnd(running.client, ids[index % ids.length] as string),
        ),
      ),
    );
    const states = (
      await running.client.request<{ tasks: { taskId: string; state: string }[] }>('GET', '/api/tasks')
    ).tasks
      .filter((task) => ids.includes(task.taskId))
      .map((task) => task.state);
    rows.push({
      section: 'server memory, 8 running tasks, 10 clients',
      peakRssMiB: Math.round((peakRssFromKernel() ?? 0) / 1024 / 1024),
      wallSeconds: Math.round(wallMs / 1000),
      states,
    });
  } finally {
    await running.close();
    await rm(repo, { recursive: true, force: true });
  }
  process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
}

runMain(main);
