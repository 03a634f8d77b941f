/**
 * One run of a coding-agent CLI that streams JSONL on stdout (claude, gemini, qwen, opencode): exec in the sandbox with the
 * stream parsed line by line, every stray process of the run ended before the host looks at anything, then
 * the stream's summary joined with how the process ended.
 */
import { withInstructionsFile, type InstructionsSettings } from './instructions-file.js';
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { SandboxRuntime, WorkerRunRequest, WorkerRunResult } from '../core/ports.js';
import { InternalError } from '../errors.js';
import { endStrayProcesses } from '../sandbox/stray-processes.js';
import { toWorkerRunResult, type WorkerStreamSummary } from './codex-events.js';
import type { OpenAiApi } from './worker-kinds.js';

/**
 * What every worker CLI beside codex is wired with; one adapter per CLI takes it. Only the environment
 * variable each value goes into differs (ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL, OPENAI_BASE_URL...).
 */
export interface CliWorkerOptions {
  model: string;
  /** Its base URL inside the sandbox: the relay's origin plus the worker's gateway prefix. */
  baseUrl: string;
  /** The key it sends (the per-task gateway token). */
  apiKey: string;
  /** Its state directory inside the container (HOME, or CLAUDE_CONFIG_DIR): per task, kept across runs. */
  home: string;
  workdir?: string;
  /** Flags appended after agent-runner's own (`workers.<type>.extraArgs`). */
  extraArgs?: readonly string[];
  /** The OpenAI-style API it speaks (qwen, opencode; default `responses`). */
  api?: OpenAiApi;
}

/** What a stream parser gives the run: lines in, a summary and (when the CLI states one) a final text out. */
export interface StreamParser {
  push(line: string): void;
  summary(): WorkerStreamSummary;
  finalText?(): string | null;
}

export interface CliRun {
  worker: string;
  argv: string[];
  env: Record<string, string>;
  workdir: string;
  parser: StreamParser;
  /** The CLI's global instructions file in the sandbox ({@link instructionsFilePath}): the memory bank's place. */
  instructionsFile: string;
  /**
   * The settings file that makes the CLI read the instructions file and not the workspace's copy of the
   * project's own (qwen: `context.fileName`), written with it.
   */
  instructionsSettings?: InstructionsSettings;
  /** The session the run continues or creates, when the CLI was given it (kept if the stream never says). */
  sessionId: string;
}

/** The session a run continues (`resume`: the earlier run's) or creates (a new id, chosen up front). */
export function runSession(worker: string, request: WorkerRunRequest): string {
  if (request.mode !== 'resume') return randomUUID();
  if (!request.threadId) throw new InternalError(`${worker} resume needs the session id of an earlier run.`);
  return request.threadId;
}

export async function runStreamingCli(
  runtime: SandboxRuntime,
  request: WorkerRunRequest,
  run: CliRun,
): Promise<WorkerRunResult> {
  await mkdir(request.runDir, { recursive: true });
  const command = withInstructionsFile(
    run,
    run.instructionsFile,
    request.instructions,
    run.instructionsSettings,
  );
  const exec = await runtime.exec(request.sandboxId, command.argv, {
    workdir: run.workdir,
    env: command.env,
    timeoutMs: request.timeoutMs,
    graceMs: request.graceMs,
    stdoutPath: path.join(request.runDir, `${run.worker}.jsonl`),
    stderrPath: path.join(request.runDir, `${run.worker}.stderr.log`),
    onStdoutLine: (line) => run.parser.push(line),
    signal: request.signal,
  });
  // Nothing the run started may still run while the host reads the sandbox (as after a codex run).
  await endStrayProcesses(runtime, request.sandboxId, request.graceMs);
  const result = toWorkerRunResult(run.parser.summary(), exec, {
    timeoutMs: request.timeoutMs,
    lastMessage: run.parser.finalText?.() ?? null,
    worker: run.worker,
    streamFile: `${run.worker}.jsonl`,
  });
  // A run that died before its first event still belongs to the session it was given.
  if (result.threadId === null && request.mode === 'resume') return { ...result, threadId: run.sessionId };
  return result;
}
