/**
 * Section 7: how soon a real `agent-runner run` (the built CLI, a fresh process) asks the Meta-agent for the
 * plan and the worker asks its model, on a small repository and a big one. The models are the scripted
 * servers the end-to-end tests use (real HTTP, real codex in the real sandbox); the run is interrupted as
 * soon as the worker's first request arrives, and must then end NEEDS_REVIEW (130) with its container gone.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { assistantMessage, ScriptedResponsesServer } from '../tests/support/scripted-responses-server.js';
import { startScriptedChatServer } from '../tests/support/scripted-chat-server.js';
import { planReply, runWorkerReply } from '../tests/support/meta-replies.js';
import { round } from './stats.js';

export interface StartLatency {
  label: string;
  files: number;
  /** From spawning `agent-runner run` to the plan_task request reaching the model server. */
  firstMetaRequestMs: number;
  /** From spawning `agent-runner run` to codex's first request reaching the model server. */
  firstWorkerRequestMs: number;
  exitCode: number | null;
}

const BIN = path.join(import.meta.dirname, '..', 'bin', 'agent-runner.js');
const KEY = 'bench-key-not-secret';

/** Resolves with the time `probe` first returns true (polled every 2 ms), or rejects after `timeoutMs`. */
function firstTime(probe: () => boolean, timeoutMs: number, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const timer = setInterval(() => {
      if (probe()) {
        clearInterval(timer);
        resolve(performance.now());
      } else if (Date.now() - started > timeoutMs) {
        clearInterval(timer);
        reject(new Error(`no ${what} within ${timeoutMs} ms`));
      }
    }, 2);
  });
}

export async function measureStartLatency(
  repo: string,
  label: string,
  files: number,
  scratch: string,
): Promise<StartLatency> {
  const taskId = `bench-start-${randomBytes(3).toString('hex')}`;
  const chat = await startScriptedChatServer([
    { reply: planReply(taskId, [{ id: 'AC1', description: 'The change is made.' }]) },
    { reply: runWorkerReply('Make the change.') },
  ]);
  const responses = await new ScriptedResponsesServer([
    { kind: 'output', items: [assistantMessage('Done.')] },
  ]).start();
  const prd = path.join(scratch, `${taskId}.md`);
  const config = path.join(scratch, `${taskId}.yaml`);
  await writeFile(prd, '# Bench task\n\nMake the change.\n');
  await writeFile(config, 'worker:\n  grace: 1s\ndod:\n  skip: true\n');
  try {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      [BIN, 'run', '--prd', prd, '--task-id', taskId, '--headless', '--config', config],
      {
        cwd: repo,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: {
          ...process.env,
          OPENAI_BASE_URL: chat.url,
          OPENAI_API_KEY: KEY,
          AGENT_RUNNER_WORKER_BASE_URL: responses.baseUrl('127.0.0.1'),
        },
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const failedEarly = exited.then((code) => {
      throw new Error(`agent-runner exited ${code} before the worker's first request:\n${stderr}`);
    });
    const meta = await Promise.race([
      firstTime(() => chat.requests.length > 0, 120_000, 'Meta-agent request'),
      failedEarly,
    ]);
    const worker = await Promise.race([
      firstTime(() => responses.responseRequests().length > 0, 300_000, 'worker request'),
      failedEarly,
    ]);
    child.kill('SIGINT');
    const exitCode = await exited;
    return {
      label,
      files,
      firstMetaRequestMs: round(meta - started),
      firstWorkerRequestMs: round(worker - started),
      exitCode,
    };
  } finally {
    await chat.close();
    await responses.close();
  }
}
