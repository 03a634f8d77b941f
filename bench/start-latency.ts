/**
 * Section 7: how soon a real `agent-runner run` (the built CLI, a fresh process) asks the Meta-agent for the
 * plan and the worker asks its model, on a small repository and a big one. The models are the scripted
 * servers the end-to-end tests use (real HTTP, real codex in the real sandbox); the run is interrupted as
 * soon as the worker's first request arrives, and must then end NEEDS_REVIEW (130) with its container gone.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import { assistantMessage, ScriptedResponsesServer } from '../tests/support/scripted-responses-server.js';
import { startScriptedChatServer } from '../tests/support/scripted-chat-server.js';
import { planReply, runWorkerReply } from '../tests/support/meta-replies.js';
import { settleDisk } from './preparation.js';
import { median, round } from './stats.js';

export interface StartLatency {
  label: string;
  files: number;
  /** `parallel.split` of the runs: `auto` plans with subtasks allowed; a PRD that stays one task must start as fast. */
  split: 'auto' | 'never';
  /**
   * From spawning `agent-runner run` to the first byte of the plan_task request reaching the model server:
   * the median of `metaSamplesMs`.
   */
  firstMetaRequestMs: number;
  metaSamplesMs: number[];
  /**
   * The CPU time (user + system, all its threads) `agent-runner` had used when that first byte arrived: the
   * median of `metaCpuSamplesMs`. On a shared machine the wall time moves with the load; this moves far less.
   */
  firstMetaRequestCpuMs: number;
  metaCpuSamplesMs: number[];
  /** The same spawn of `node -e 0` (Node's own start on this machine now), median of as many samples. */
  nodeFloorMs: number;
  /** From spawning `agent-runner run` to codex's first request reaching the model server: the median of `workerSamplesMs`. */
  firstWorkerRequestMs: number;
  workerSamplesMs: number[];
  /**
   * The floor of the same repository, measured alternately with those runs: `git worktree add` of the same
   * commit + a container created and started through the raw Engine API (medians).
   */
  floorMs: number;
  /** firstWorkerRequestMs / floorMs. */
  workerRatio: number;
  /** The floor with git's parallel checkout (reported, not the target's floor), and the ratio to it. */
  parallelFloorMs: number;
  parallelWorkerRatio: number;
  /** Every full run must end 130 after the interrupt; the first that did not, else 130. */
  exitCode: number | null;
}

interface OneStart {
  metaMs: number;
  /** The process's CPU time when the Meta-agent request's first byte arrived (null where /proc is missing). */
  metaCpuMs: number | null;
  workerMs: number | null;
  exitCode: number | null;
}

/** `node -e 0` from spawn to exit: the floor any Node CLI starts from. */
function nodeStart(): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', () => resolve(performance.now() - started));
  });
}

/**
 * Section 7 for one repository: `samples` runs interrupted at their first Meta-agent request (their median is
 * the figure; the machine is shared, single samples are noise), interleaved with `node -e 0` as the floor,
 * then `workerSamples` runs to the worker's first request, alternating with the floor of the same work done
 * the cheapest way (`floor`: `git worktree add` + a container through the raw Engine API), so that both see
 * the same page cache and load.
 */
export async function measureStartLatency(
  repo: string,
  label: string,
  files: number,
  scratch: string,
  floor: () => Promise<{ ms: number; parallelMs: number }>,
  split: 'auto' | 'never' = 'never',
  samples = 7,
  workerSamples = 3,
): Promise<StartLatency> {
  const metaSamplesMs: number[] = [];
  const metaCpuSamplesMs: number[] = [];
  const nodeFloor: number[] = [];
  for (let i = 0; i < samples; i += 1) {
    nodeFloor.push(await nodeStart());
    const start = await startOnce(repo, scratch, true, split);
    metaSamplesMs.push(start.metaMs);
    if (start.metaCpuMs !== null) metaCpuSamplesMs.push(start.metaCpuMs);
    sampleProgress(`${label}: Meta-agent sample ${i + 1}/${samples}: ${round(metaSamplesMs.at(-1)!)} ms`);
  }
  const workerSamplesMs: number[] = [];
  const floorSamplesMs: number[] = [];
  const parallelFloorSamplesMs: number[] = [];
  const measureFloor = async () => {
    const measured = await floor();
    floorSamplesMs.push(measured.ms);
    parallelFloorSamplesMs.push(measured.parallelMs);
  };
  let exitCode: number | null = 130;
  for (let i = 0; i < workerSamples; i += 1) {
    if (i % 2 === 0) await measureFloor();
    await settleDisk();
    const full = await startOnce(repo, scratch, false, split);
    workerSamplesMs.push(full.workerMs!);
    sampleProgress(`${label}: worker sample ${i + 1}/${workerSamples}: ${round(full.workerMs!)} ms`);
    if (full.exitCode !== 130 && exitCode === 130) exitCode = full.exitCode;
    if (i % 2 === 1) await measureFloor();
  }
  const firstWorkerRequestMs = median(workerSamplesMs);
  const floorMs = median(floorSamplesMs);
  const parallelFloorMs = median(parallelFloorSamplesMs);
  return {
    label,
    files,
    split,
    firstMetaRequestMs: round(median(metaSamplesMs)),
    metaSamplesMs: metaSamplesMs.map((ms) => round(ms)),
    firstMetaRequestCpuMs: metaCpuSamplesMs.length > 0 ? round(median(metaCpuSamplesMs)) : 0,
    metaCpuSamplesMs,
    nodeFloorMs: round(median(nodeFloor)),
    firstWorkerRequestMs: round(firstWorkerRequestMs),
    workerSamplesMs: workerSamplesMs.map((ms) => round(ms)),
    floorMs: round(floorMs),
    workerRatio: round(firstWorkerRequestMs / floorMs, 2),
    parallelFloorMs: round(parallelFloorMs),
    parallelWorkerRatio: round(firstWorkerRequestMs / parallelFloorMs, 2),
    exitCode,
  };
}

/** One line per sample on stderr (a hung sample shows where), when AGENT_RUNNER_BENCH_VERBOSE is set. */
function sampleProgress(line: string): void {
  if (process.env.AGENT_RUNNER_BENCH_VERBOSE) process.stderr.write(`[bench] ${line}\n`);
}

const BIN = path.join(import.meta.dirname, '..', 'bin', 'agent-runner.js');
const KEY = 'bench-key-not-secret';

/** User + system CPU time of a running process so far (its threads included), from /proc; null without it. */
function cpuTimeMs(pid: number): number | null {
  try {
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th of them.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1000) / CLOCK_TICKS_PER_SECOND : null;
  } catch {
    return null;
  }
}

/** The kernel's clock ticks per second (`getconf CLK_TCK`), 100 on Linux. */
const CLOCK_TICKS_PER_SECOND = 100;

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

/**
 * A TCP forwarder in front of the model server that notes when the first byte of the first connection
 * arrives: the Meta-agent's request is timed at its first byte, not when the server has parsed it.
 */
async function firstByteForwarder(
  target: string,
  onFirstByte: () => void = () => {},
): Promise<{
  url: string;
  firstByteAt: () => number | undefined;
  close: () => Promise<void>;
}> {
  const upstream = new URL(target);
  let firstByteAt: number | undefined;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    client.once('data', () => {
      if (firstByteAt !== undefined) return;
      firstByteAt = performance.now();
      onFirstByte();
    });
    const forward = createConnection(Number(upstream.port), upstream.hostname);
    for (const socket of [client, forward]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(forward).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    firstByteAt: () => firstByteAt,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * One `agent-runner run` from spawn to its first Meta-agent request and, unless `metaOnly`, to the worker's
 * first request; then it is interrupted and must end NEEDS_REVIEW (130).
 */
export async function startOnce(
  repo: string,
  scratch: string,
  metaOnly: boolean,
  split: 'auto' | 'never',
  /** A model that answers the plan after `planDelayMs`; `baseline`: run the DoD (dod.baseline), else skip it. */
  options: { planDelayMs?: number; baseline?: 'auto' | 'off' } = {},
): Promise<OneStart> {
  const taskId = `bench-start-${randomBytes(3).toString('hex')}`;
  const chat = await startScriptedChatServer([
    {
      reply: planReply(taskId, [{ id: 'AC1', description: 'The change is made.' }]),
      ...(options.planDelayMs ? { delayMs: options.planDelayMs } : {}),
    },
    { reply: runWorkerReply('Make the change.') },
  ]);
  const responses = await new ScriptedResponsesServer([
    { kind: 'output', items: [assistantMessage('Done.')] },
  ]).start();
  let pid: number | undefined;
  let metaCpuMs: number | null = null;
  const forwarder = await firstByteForwarder(chat.url, () => {
    if (pid !== undefined) metaCpuMs = cpuTimeMs(pid);
  });
  const prd = path.join(scratch, `${taskId}.md`);
  const config = path.join(scratch, `${taskId}.yaml`);
  await writeFile(prd, '# Bench task\n\nMake the change.\n');
  const dod = options.baseline ? `dod:\n  baseline: ${options.baseline}\n` : 'dod:\n  skip: true\n';
  await writeFile(config, `worker:\n  grace: 1s\n${dod}parallel:\n  split: ${split}\n`);
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
          OPENAI_BASE_URL: forwarder.url,
          OPENAI_API_KEY: KEY,
          AGENT_RUNNER_WORKER_BASE_URL: responses.baseUrl('127.0.0.1'),
        },
      },
    );
    pid = child.pid;
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const failedEarly = exited.then((code) => {
      throw new Error(`agent-runner exited ${code} before the worker's first request:\n${stderr}`);
    });
    const meta = await Promise.race([
      firstTime(() => forwarder.firstByteAt() !== undefined, 120_000, 'Meta-agent request').then(() =>
        forwarder.firstByteAt()!,
      ),
      failedEarly,
    ]);
    const worker = metaOnly
      ? null
      : await Promise.race([
          firstTime(() => responses.responseRequests().length > 0, 300_000, 'worker request'),
          failedEarly,
        ]);
    child.kill('SIGINT');
    const exitCode = await exited;
    return {
      metaMs: meta - started,
      metaCpuMs,
      workerMs: worker === null ? null : worker - started,
      exitCode,
    };
  } finally {
    await forwarder.close();
    await chat.close();
    await responses.close();
  }
}
