/**
 * `npm run bench:followup`: a follow-up starts as fast as a first run. One remote over HTTP with basic auth
 * (`git http-backend` behind tests/support/git-http-remote.ts), the demo's small Node repository, real codex in
 * its sandbox, scripted models. For each repeat, the time from the command's start to the first worker request:
 *
 * 1. the first run: `run --repo URL --push` (cache cloned; the branch, notes and task state pushed at the end);
 * 2. a follow-up on the same machine: `followup ID --repo URL --message` (the cache fetched, this machine's
 *    journal);
 * 3. a follow-up on a machine with only the remote, its cache cloned beforehand (a CI runner's warm cache):
 *    the cache fetched, the task rebuilt from the remote's state.
 *
 * Prints the medians as JSON on stdout, with the machine and its load.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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

const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
const TOKEN = 'ghp_benchFollowupToken0123456789abcdefABCD';

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

type Chat = Awaited<ReturnType<typeof startScriptedChatServer>>;

/** Runs the CLI and returns the milliseconds from its start to its first worker request. */
async function toFirstWorkerRequest(
  responses: ScriptedResponsesServer,
  args: string[],
  where: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<number> {
  const before = responses.responseRequests().length;
  const started = performance.now();
  let firstRequest = 0;
  const watch = setInterval(() => {
    if (firstRequest === 0 && responses.responseRequests().length > before)
      firstRequest = performance.now() - started;
  }, 10);
  const result = await runCliCaptured(args, where);
  clearInterval(watch);
  if (result.exitCode !== 0 || firstRequest === 0)
    throw new Error(
      `${args.slice(0, 2).join(' ')} ended ${result.exitCode}: ${result.stderr.slice(-2000)} ${result.stdout.slice(-1500)}`,
    );
  return Math.round(firstRequest);
}

/** One task's scripted turns: a plan, one worker run that commits `file`, an assessment. */
function script(
  chat: Chat,
  responses: ScriptedResponsesServer,
  id: string,
  file: string,
  content: string,
  earlier: string[] = [],
) {
  chat.push(
    { reply: planReply(id, [{ id: `AC-${file}`, description: `${file} is there`, critical: true }]) },
    { reply: runWorkerReply(`Write ${file} and commit.`) },
    // Every criterion, the earlier ones kept by the follow-up's merge included.
    { reply: assessmentReply(true, [...earlier.map((name) => `AC-${name}`), `AC-${file}`], 'Done.') },
  );
  responses.enqueue(
    {
      kind: 'output',
      items: [commandCall(`${writeFileCommand(file, content)}\ngit add -A && git commit -q -m ${file}`)],
    },
    { kind: 'output', items: [assistantMessage('Committed.')] },
  );
}

async function main(): Promise<void> {
  const machine = await machineInfo();
  const server = await new GitHttpRemote({ user: 'x-access-token', password: TOKEN }).start();
  const chat = await startScriptedChatServer();
  const responses = await new ScriptedResponsesServer().start();
  const demo = createNodeRepo();
  await server.createFrom('demo', demo.root);
  demo.remove();
  const url = server.url('demo');
  const rows = { first: [] as number[], sameMachine: [] as number[], remoteOnly: [] as number[] };
  const loads: number[] = [];
  try {
    for (let index = 0; index < REPEATS; index += 1) {
      const here = tempDir('ar-bench-fu-here-');
      const elsewhere = tempDir('ar-bench-fu-elsewhere-');
      const env = (state: string): NodeJS.ProcessEnv => ({
        ...process.env,
        XDG_STATE_HOME: state,
        GH_TOKEN: TOKEN,
        OPENAI_BASE_URL: chat.url,
        OPENAI_API_KEY: 'bench-followup-key',
        AGENT_RUNNER_WORKER_BASE_URL: responses.baseUrl('127.0.0.1'),
        AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
        CI: 'true',
      });
      const a = { cwd: here, env: env(path.join(here, 'state')) };
      const b = { cwd: elsewhere, env: env(path.join(elsewhere, 'state')) };
      writeFileSync(
        path.join(here, 'PRD.md'),
        '# Add slugify\n\nAdd `slugify(text)` in slug.js, with a test.\n',
      );
      const id = `bench-fu-${index}`;
      const remote = ['--repo', url, '--forge', 'github', '--push', '--json'];
      script(chat, responses, id, 'slug.js', SLUG_JS);
      rows.first.push(
        await toFirstWorkerRequest(responses, ['run', '--prd', 'PRD.md', '--task-id', id, ...remote], a),
      );
      script(chat, responses, id, 'slug.test.js', SLUG_TEST_JS, ['slug.js']);
      rows.sameMachine.push(
        await toFirstWorkerRequest(responses, ['followup', id, '--message', 'Add a test.', ...remote], a),
      );
      // A warm cache on the other machine (cloned before, as a CI runner's cache), no state of the task.
      await prepareRepositoryCache({ url, env: b.env, forge: 'github' });
      script(chat, responses, id, 'NOTES.md', 'slugify notes\n', ['slug.js', 'slug.test.js']);
      rows.remoteOnly.push(
        await toFirstWorkerRequest(responses, ['followup', id, '--message', 'Write notes.', ...remote], b),
      );
      loads.push(loadAverage()[0] ?? 0);
      progress(
        `${id}: first ${rows.first.at(-1)} ms, follow-up here ${rows.sameMachine.at(-1)} ms, from the remote alone ${rows.remoteOnly.at(-1)} ms (load ${loads.at(-1)})`,
      );
      rmSync(here, { recursive: true, force: true });
      rmSync(elsewhere, { recursive: true, force: true });
    }
  } finally {
    await chat.close();
    await responses.close();
    await server.stop();
  }
  const first = median(rows.first);
  const result = {
    machine: { ...machine, loadAverageAtEnd: loadAverage() },
    repeats: REPEATS,
    runs: rows,
    loadAverage1mPerRepeat: loads,
    medians: {
      'first run, to first worker request ms': first,
      'follow-up, same machine (cache fetched), ms': median(rows.sameMachine),
      'follow-up, remote alone (warm cache, state from the remote), ms': median(rows.remoteOnly),
      'same machine / first': Number((median(rows.sameMachine) / first).toFixed(2)),
      'remote alone / first': Number((median(rows.remoteOnly) / first).toFixed(2)),
    },
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

runMain(main);
