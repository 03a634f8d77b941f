/**
 * `npm run bench:remote-repo`: what `run --repo` costs against plain git, on one remote served over HTTP by
 * `git http-backend` (tests/support/git-http-remote.ts, basic auth):
 *
 * 1. git alone, on this project's own history (a repository of some size): `git clone` (full), `git clone
 *    --filter=blob:none` (partial) and `git fetch` with nothing new — the figures the full-clone decision in
 *    src/remote/repository-cache.ts rests on;
 * 2. the cache alone (`prepareRepositoryCache`) on the same remote: first (clone) and second (fetch);
 * 3. `run --repo` end to end on the demo's small Node repository (real codex, scripted models): the time from the
 *    command's start to the first worker request (the worker is running in its ready sandbox), first task (cache
 *    cloned) and second task (cache fetched).
 *
 * Prints the rows as JSON on stdout; the machine and its load with them.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { prepareRepositoryCache } from '../src/remote/repository-cache.js';
import { runCliCaptured } from '../tests/support/cli.js';
import { GitHttpRemote } from '../tests/support/git-http-remote.js';
import { assessmentReply, planReply, runWorkerReply } from '../tests/support/meta-replies.js';
import { startScriptedChatServer } from '../tests/support/scripted-chat-server.js';
import {
  ScriptedResponsesServer,
  assistantMessage,
  commandCall,
} from '../tests/support/scripted-responses-server.js';
import { SLUG_JS, SLUG_TEST_JS, createNodeRepo, writeFileCommand } from '../tests/support/task-repo.js';
import { loadAverage, machineInfo } from './machine.js';
import { runMain } from './run-main.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function timedAsync(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return Math.round(performance.now() - started);
}

function credentialed(server: GitHttpRemote, repo: string): string {
  return server.url(repo).replace('://', `://${server.user}:${server.password}@`);
}

/** Section 1: git alone (asynchronous: the remote's server runs in this process). */
async function gitAlone(server: GitHttpRemote, scratch: string): Promise<Record<string, number | string>> {
  const url = credentialed(server, 'self');
  const git = (...args: string[]) => execa('git', args, { cwd: scratch });
  const full: number[] = [];
  const partial: number[] = [];
  const fetch: number[] = [];
  const fullCheckout: number[] = [];
  const partialCheckout: number[] = [];
  for (let index = 0; index < REPEATS; index += 1) {
    // With the base checked out, as the cache does: the partial clone then fetches that tree's blobs too.
    fullCheckout.push(
      await timedAsync(() => git('clone', '-q', url, path.join(scratch, `full-co-${index}`))),
    );
    partialCheckout.push(
      await timedAsync(() =>
        git('clone', '-q', '--filter=blob:none', url, path.join(scratch, `partial-co-${index}`)),
      ),
    );
    const fullDir = path.join(scratch, `full-${index}`);
    const partialDir = path.join(scratch, `partial-${index}`);
    full.push(await timedAsync(() => git('clone', '-q', '--no-checkout', url, fullDir)));
    partial.push(
      await timedAsync(() => git('clone', '-q', '--no-checkout', '--filter=blob:none', url, partialDir)),
    );
    fetch.push(await timedAsync(() => git('-C', fullDir, 'fetch', '-q', 'origin')));
  }
  const size = (dir: string) =>
    execFileSync('du', ['-sk', path.join(dir, '.git')], { encoding: 'utf8' }).split('\t')[0];
  return {
    'git clone (full, no checkout) ms': median(full),
    'git clone --filter=blob:none (no checkout) ms': median(partial),
    'git fetch, nothing new ms': median(fetch),
    'git clone (full) + checkout ms': median(fullCheckout),
    'git clone --filter=blob:none + checkout ms': median(partialCheckout),
    'full clone .git KiB': Number(size(path.join(scratch, 'full-0'))),
    'partial clone .git KiB': Number(size(path.join(scratch, 'partial-0'))),
    commits: Number(
      execFileSync('git', ['-C', path.join(scratch, 'full-0'), 'rev-list', '--count', '--all'], {
        encoding: 'utf8',
      }),
    ),
  };
}

/** Section 2: the cache alone, with its checkout of the base. */
async function cacheAlone(server: GitHttpRemote): Promise<Record<string, number>> {
  const first: number[] = [];
  const second: number[] = [];
  for (let index = 0; index < REPEATS; index += 1) {
    const state = mkdtempSync(path.join(tmpdir(), 'ar-bench-remote-state-'));
    const env = { ...process.env, XDG_STATE_HOME: state };
    first.push(await timedAsync(() => prepareRepositoryCache({ url: credentialed(server, 'self'), env })));
    second.push(await timedAsync(() => prepareRepositoryCache({ url: credentialed(server, 'self'), env })));
    rmSync(state, { recursive: true, force: true });
  }
  return {
    'cache first (clone + checkout) ms': median(first),
    'cache second (fetch + checkout) ms': median(second),
  };
}

/** Section 3: `run --repo` to the first worker request, first and second task on one cache. */
async function runToFirstWorkerRequest(server: GitHttpRemote): Promise<Record<string, number>> {
  const chat = await startScriptedChatServer();
  const responses = await new ScriptedResponsesServer().start();
  const first: number[] = [];
  const second: number[] = [];
  try {
    for (let index = 0; index < REPEATS; index += 1) {
      const state = mkdtempSync(path.join(tmpdir(), 'ar-bench-remote-state-'));
      const cwd = mkdtempSync(path.join(tmpdir(), 'ar-bench-remote-cwd-'));
      writeFileSync(
        path.join(cwd, 'PRD.md'),
        '# Add slugify\n\nAdd `slugify(text)` in slug.js, with a test.\n',
      );
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        XDG_STATE_HOME: state,
        OPENAI_BASE_URL: chat.url,
        OPENAI_API_KEY: 'bench-remote-key',
        AGENT_RUNNER_WORKER_BASE_URL: responses.baseUrl('127.0.0.1'),
        AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
        CI: 'true',
      };
      for (const [label, list] of [
        ['first', first],
        ['second', second],
      ] as const) {
        const id = `bench-remote-${label}-${index}`;
        chat.push(
          { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works', critical: true }]) },
          { reply: runWorkerReply('Implement slugify with a test and commit.') },
          { reply: assessmentReply(true, ['AC-1'], 'Done.') },
        );
        responses.enqueue(
          {
            kind: 'output',
            items: [
              commandCall(
                `${writeFileCommand('slug.js', SLUG_JS)}\n${writeFileCommand('slug.test.js', SLUG_TEST_JS)}\ngit add -A && git commit -q -m slug`,
              ),
            ],
          },
          { kind: 'output', items: [assistantMessage('Committed.')] },
        );
        const before = responses.responseRequests().length;
        const started = performance.now();
        let firstRequest = 0;
        const watch = setInterval(() => {
          if (firstRequest === 0 && responses.responseRequests().length > before)
            firstRequest = performance.now() - started;
        }, 10);
        const result = await runCliCaptured(
          ['run', '--repo', credentialed(server, 'demo'), '--prd', 'PRD.md', '--task-id', id, '--json'],
          { cwd, env },
        );
        clearInterval(watch);
        if (result.exitCode !== 0 || firstRequest === 0)
          throw new Error(`${id} ended ${result.exitCode}: ${result.stderr.slice(-2000)}`);
        list.push(Math.round(firstRequest));
        progress(`${id}: first worker request after ${Math.round(firstRequest)} ms`);
      }
      rmSync(state, { recursive: true, force: true });
      rmSync(cwd, { recursive: true, force: true });
    }
  } finally {
    await chat.close();
    await responses.close();
  }
  return {
    'run --repo first task, to first worker request ms': median(first),
    'run --repo second task, to first worker request ms': median(second),
  };
}

async function main(): Promise<void> {
  const machine = await machineInfo();
  const server = await new GitHttpRemote().start();
  const scratch = mkdtempSync(path.join(tmpdir(), 'ar-bench-remote-'));
  try {
    execFileSync('git', ['clone', '-q', '--bare', '--no-local', ROOT, server.path('self')]);
    // Partial clones need the server's consent; without it git silently clones everything.
    execFileSync('git', ['-C', server.path('self'), 'config', 'uploadpack.allowFilter', 'true']);
    const demo = createNodeRepo();
    await server.createFrom('demo', demo.root);
    demo.remove();
    progress('git alone');
    const git = await gitAlone(server, scratch);
    progress('the cache alone');
    const cache = await cacheAlone(server);
    progress('run --repo');
    const run = await runToFirstWorkerRequest(server);
    process.stdout.write(
      `${JSON.stringify({ machine: { ...machine, loadAverageAtEnd: loadAverage() }, repeats: REPEATS, git, cache, run }, null, 2)}\n`,
    );
  } finally {
    await server.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

runMain(main);
