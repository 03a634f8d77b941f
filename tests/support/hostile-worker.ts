/**
 * A hostile worker for the security suite (tests/security): the real CLI (`agent-runner run`) with a scripted
 * Meta-agent that plans one criterion and asks for one worker run, and a scripted Responses server whose
 * replies make the real codex binary run the attacker's shell commands in the real sandbox. Helpers then look
 * for what must not leak (in every file agent-runner wrote, every Meta-agent request, stdout and stderr).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import { command, runToEnd, setupFaultTask, type FaultTask } from './faults-harness.js';
import { assessmentReply, planReply, runWorkerReply } from './meta-replies.js';
import { assistantMessage, type ScriptedReply } from './scripted-responses-server.js';

export interface HostileRun {
  task: FaultTask;
  taskId: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface HostileRunOptions {
  /** agent-runner.yaml of the repository (committed before the run). */
  yaml?: string;
  /** Shell commands the worker runs, one codex turn each, in order (a function sees the prepared task). */
  commands: string[] | ((task: FaultTask) => string[]);
  /** The worker's final message. */
  finalMessage?: string;
  /** Called after the repository exists, before the run (plant files, add commits). */
  prepare?: (task: FaultTask) => void;
  /** Whether the scripted assessment says done (default true: the facts must still agree). */
  satisfied?: boolean;
  /** `--json` (default) or the human output: progress on stderr, the summary on stdout. */
  json?: boolean;
  /** Meta-agent replies after the assessment (the decisions that follow a refusal), in order. */
  then?: string[];
}

/** The runner's config for the suite: short timeouts, the default network policy (gateway-only). */
export const HOSTILE_YAML = [
  'meta:',
  '  requestTimeout: 10s',
  '  maxRetries: 1',
  'worker:',
  '  timeout: 90s',
  '  grace: 2s',
  'limits:',
  '  maxIterations: 1',
  '',
].join('\n');

/** One task: plan, one worker run of `commands`, assessment; runs the CLI to its end (`--json` unless told). */
export async function runHostileTask(taskId: string, options: HostileRunOptions): Promise<HostileRun> {
  const task = await setupFaultTask(taskId, options.yaml ?? HOSTILE_YAML);
  // setupFaultTask defaults to the open policy for speed; the suite attacks the default policy.
  delete task.env.AGENT_RUNNER_NETWORK;
  options.prepare?.(task);
  task.chat.push(
    { reply: planReply(taskId, [{ id: 'AC-1', description: 'The requested change is committed.' }]) },
    { reply: runWorkerReply('Do the requested change and commit it.') },
    { reply: assessmentReply(options.satisfied ?? true, ['AC-1'], 'Checked the facts.') },
    ...(options.then ?? []).map((reply) => ({ reply })),
  );
  const commands = typeof options.commands === 'function' ? options.commands(task) : options.commands;
  const replies: ScriptedReply[] = commands.map((cmd) => command(cmd));
  replies.push({ kind: 'output', items: [assistantMessage(options.finalMessage ?? 'Done.')] });
  task.responses.enqueue(...replies);
  const json = (options.json ?? true) ? ['--json'] : [];
  const result = await runToEnd(['run', '--prd', 'PRD.md', '--task-id', taskId, ...json], {
    cwd: task.root,
    env: task.env,
  });
  return { task, taskId, ...result };
}

/** A host directory outside every mount, holding a file with `content`; removed when the test ends. */
export function hostSecretFile(content: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-sec-host-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'host-secret.txt');
  writeFileSync(file, content);
  return file;
}

function filesUnder(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const full = path.join(dir, name);
    const info = statSync(full, { throwIfNoEntry: false });
    if (!info) return [];
    if (info.isDirectory()) return name === 'sandboxes' || name === 'worktrees' ? [] : filesUnder(full);
    return info.isFile() ? [full] : [];
  });
}

/**
 * Where `needle` appears in what agent-runner produced: files under `.agent-runner/` (note, journal, logs,
 * Meta-agent call logs; not the sandbox repository or the worktree, which hold worker data by design), every
 * request the Meta-agent's endpoint received, stdout and stderr. Empty when nowhere.
 */
export function whereItLeaked(run: HostileRun, needle: string): string[] {
  const places: string[] = [];
  for (const file of filesUnder(path.join(run.task.root, '.agent-runner'))) {
    if (readFileSync(file).includes(needle)) places.push(path.relative(run.task.root, file));
  }
  run.task.chat.requests.forEach((request, index) => {
    if (JSON.stringify(request.body).includes(needle)) places.push(`meta request ${index + 1}`);
  });
  if (run.stdout.includes(needle)) places.push('stdout');
  if (run.stderr.includes(needle)) places.push('stderr');
  return places;
}

/** The `--json` summary line. */
export function summaryOf(run: HostileRun): Record<string, unknown> {
  return JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
}
