/** One worker run: the prompt rendered behind its port, the run in the sandbox, its record, then validation. */
import { stop, type Next } from './outcome.js';
import { workerOptions, type TaskLoop } from './task-loop.js';
import type { WorkerRunResult } from './ports.js';
import type { MetaDecision, RunRecord, Usage } from './types.js';
import { costOf } from './usage.js';
import { WorkerEventBound } from './worker-event-bound.js';
import { validate } from './validation.js';

/** The text of the worker CLI's instructions file (a worker type outside the table: the entries alone). */
function workerInstructions(loop: TaskLoop, type: string): string | undefined {
  const memory = loop.memoryBank;
  if (!memory) return undefined;
  return (memory.workerInstructions as Readonly<Record<string, string>>)[type] ?? memory.instructions;
}

/** A follow-up's runs count against its own limit (`loop.runsBefore` are its history). */
export async function runWorker(loop: TaskLoop, decision: MetaDecision, signal?: AbortSignal): Promise<Next> {
  const { options } = loop;
  if (loop.runs.length - loop.runsBefore >= options.limits.maxIterations)
    return stop({ code: 'limit', limit: { code: 'max_iterations', limit: options.limits.maxIterations } });
  const call = decision.workerCall;
  if (!call || !loop.plan || !loop.task || !loop.sandboxId) throw new Error('run_worker without its inputs');
  const prompt = renderPrompt(loop, decision, call.prompt);
  const index = loop.runs.length + 1;
  const worker = workerOptions(options, call.workerType);
  const thread = loop.threads.get(worker.type);
  const mode = call.mode === 'resume' && thread ? 'resume' : 'exec';
  loop.emit({ type: 'worker_started', run: index, mode, prompt, worker: worker.type, model: worker.model });
  loop.unobservedRun = index;
  loop.workerRanSinceEvidence = true;
  const bound = new WorkerEventBound();
  const result = await loop.deps.worker.run({
    sandboxId: loop.sandboxId,
    workerType: worker.type,
    mode,
    prompt,
    threadId: mode === 'resume' ? thread : undefined,
    runDir: `${options.runDir}/run-${index}`,
    timeoutMs: Math.max(1000, Math.min(worker.timeoutMs, loop.ledger.remainingMs())),
    graceMs: options.worker.graceMs,
    onEvent: (event) => {
      const kept = bound.admit(event);
      if (kept) loop.emit({ type: 'worker_event', run: index, event: kept });
    },
    signal,
    instructions: workerInstructions(loop, worker.type),
  });
  const dropped = bound.summary();
  if (dropped) loop.emit({ type: 'worker_events_dropped', run: index, ...dropped });
  if (result.threadId) loop.threads.set(worker.type, result.threadId);
  const usage: Usage = {
    ...result.usage,
    costUsd: costOf(result.usage, worker.model, options.prices),
  };
  loop.ledger.recordWorkerRun(usage);
  loop.emit({
    type: 'worker_finished',
    run: index,
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    failed: result.failed,
    durationMs: result.durationMs,
    worker: worker.type,
    model: worker.model,
    usage,
  });
  const record: RunRecord = {
    index,
    decision,
    startedAt: loop.deps.clock.now() - result.durationMs,
    mode,
    workerType: worker.type,
    model: worker.model,
    ...runOutcome(result),
    usage,
    refusals: [],
  };
  loop.runs.push(record);
  loop.recordRun(record);
  if (signal?.aborted) return stop(loop.limitReached(signal) ?? { code: 'interrupted' });
  // A disk cap stopped the run: nothing more runs in the sandbox (the finish brings the commits back).
  const disk = await loop.diskLimit();
  if (disk) return stop(disk);
  // The gateway refused the worker's model requests: the budget is spent. The finish still brings the run's
  // commits back and saves its uncommitted work.
  if (result.budgetExhausted) return stop({ code: 'budget_spent', reason: result.budgetExhausted });
  if (result.providerFailure) return stop({ code: 'error', error: loop.fatal ?? result.providerFailure });
  return validate(loop, decision, signal);
}

/** What a run record keeps of the worker's result. */
function runOutcome(result: WorkerRunResult) {
  return {
    durationMs: result.durationMs,
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    failed: result.failed,
    threadId: result.threadId,
    commands: result.commands,
    finalMessage: result.finalMessage,
    errors: result.errors,
  };
}

/** The worker prompt of one run: the task, its criteria and scope, the patterns, the memory bank, the instruction. */
function renderPrompt(loop: TaskLoop, decision: MetaDecision, instruction: string): string {
  const { options } = loop;
  if (!loop.plan || !loop.task) throw new Error('run_worker without its inputs');
  return loop.deps.workerPrompt.render({
    taskId: options.taskId,
    title: loop.plan.title,
    branch: loop.task.branch,
    acceptanceCriteria: loop.plan.acceptanceCriteria,
    scope: loop.task.scopeStatement,
    patterns: options.patterns.resolve(decision.usedPatterns),
    instruction,
    decisions: loop.decisions,
  });
}
