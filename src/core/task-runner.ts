/**
 * The AgentRunner loop. Imports ports only: the Meta-agent decides, the worker works in the sandbox, and the
 * runner decides completion from facts it observes itself. Each step returns what happens next (go on, or stop
 * with a coded outcome); every terminal path writes the note and stops the sandbox.
 */
import { AgentRunnerError } from '../errors.js';
import { Ledger } from './ledger.js';
import { askedQuestion } from './records.js';
import { goOn, stop, type Next, type TaskOutcome } from './outcome.js';
import type { Clock, PreparedTask } from './ports.js';
import { StallCounter, stallDescription } from './stall.js';
import { announceFollowup, followupToPlan } from './followup-step.js';
import { finishTask } from './task-finish.js';
import { diskFullError, TaskLoop, type TaskRunnerDeps, type TaskRunnerOptions } from './task-loop.js';
import { planWhilePreparing, preflightCriteria } from './task-startup.js';
import type { MetaDecision, TaskSummary } from './types.js';
import { ZERO_USAGE } from './usage.js';
import { observeAndCheck, validate } from './validation.js';
import { runWorker } from './worker-step.js';

export type { TaskRecord } from './task-record.js';
export type { TaskRunnerDeps, TaskRunnerOptions } from './task-loop.js';

/** What {@link TaskRunner.runOrHandOff} ends with. */
export type TaskRunResult =
  { kind: 'finished'; summary: TaskSummary } | { kind: 'handed_off'; task: PreparedTask | null };

/** A task's own ledger: its limits, what its earlier attempts spent, and its project's ledger as parent. */
export function taskLedger(
  options: Pick<TaskRunnerOptions, 'limits' | 'previous' | 'taskId'>,
  clock: Pick<Clock, 'now'>,
  parent?: Ledger,
): Ledger {
  const previous = options.previous;
  return new Ledger(options.limits, clock, {
    taskId: options.taskId,
    ...(previous
      ? {
          earlier: {
            metaCalls: previous.metaCalls,
            meta: previous.usage,
            worker: previous.workerUsage ?? ZERO_USAGE,
            elapsedMs: previous.elapsedMs ?? 0,
          },
        }
      : {}),
    ...(parent ? { parent } : {}),
  });
}

export class TaskRunner {
  private readonly loop: TaskLoop;
  private readonly stalls = new StallCounter();

  constructor(options: TaskRunnerOptions, deps: TaskRunnerDeps) {
    this.loop = new TaskLoop(options, deps, deps.ledger ?? taskLedger(options, deps.clock));
  }

  /** Runs the task to a terminal state. Never throws for task-level failures: they end in the summary. */
  async run(outerSignal?: AbortSignal): Promise<TaskSummary> {
    const result = await this.runOrHandOff(outerSignal);
    if (result.kind === 'handed_off') throw new Error('the task was handed off; use runOrHandOff');
    return result.summary;
  }

  /** As {@link run}, or `handed_off` when the plan given from outside split the work. */
  async runOrHandOff(outerSignal?: AbortSignal): Promise<TaskRunResult> {
    const { loop } = this;
    loop.startedAt = loop.deps.clock.now();
    loop.ledger.start();
    // A fatal recording error stops the worker like an interrupt does, but ends the task FAILED with it.
    const signal = outerSignal
      ? AbortSignal.any([outerSignal, loop.fatalAbort.signal])
      : loop.fatalAbort.signal;
    let outcome: TaskOutcome;
    try {
      const ended = await this.steps(signal);
      // Nothing ran in the sandbox (a set-up that finished first is all): it goes; no note, no terminal state.
      if (ended === 'handed_off' && !loop.fatal) {
        if (loop.sandboxId) await loop.deps.sandboxes.stop(loop.sandboxId).catch(() => undefined);
        return { kind: 'handed_off', task: loop.task };
      }
      // A recording failure wins over whatever the steps ended with (a hand-off included).
      outcome = loop.fatal ? { code: 'error', error: loop.fatal } : (ended as TaskOutcome);
    } catch (caught) {
      outcome = await this.outcomeOfError(caught, signal);
    }
    // A first decision asked early and never taken (the task stopped first): stopped, or its spending counted.
    await loop.firstDecision?.discard();
    loop.firstDecision = null;
    const error = outcome.code === 'error' ? outcome.error : null;
    return { kind: 'finished', summary: await finishTask(loop, outcome, error) };
  }

  /** A step threw: a recording failure, a full disk, an interrupt, the wall clock, or an error of its own. */
  private async outcomeOfError(caught: unknown, signal: AbortSignal): Promise<TaskOutcome> {
    const { loop } = this;
    const fatal = loop.fatal ?? diskFullError(caught, loop.options.runDir);
    if (fatal) return { code: 'error', error: fatal };
    // A set-up command or a check stopped by a disk cap fails as a consequence: the cap is the reason.
    const disk = await loop.diskLimit().catch(() => null);
    if (disk) return disk;
    if (signal.aborted) return { code: 'interrupted' };
    // A Meta-agent call or a check cut by the wall clock ends like the limit itself.
    if (loop.deps.clock.now() >= loop.ledger.deadline()) return loop.wallClockOutcome();
    const error =
      caught instanceof AgentRunnerError
        ? caught
        : new AgentRunnerError(
            'internal',
            `internal error: ${(caught as Error)?.message ?? String(caught)}`,
            {
              cause: caught,
            },
          );
    return { code: 'error', error };
  }

  /** Start-up, then one step per Meta-agent decision until one says stop. */
  private async steps(signal: AbortSignal): Promise<TaskOutcome | 'handed_off'> {
    const { loop } = this;
    announceFollowup(loop);
    loop.move({ type: 'start' });
    loop.memory = await loop.deps.notes.readMemory(loop.options.taskId);
    loop.memoryBank = (await loop.deps.memoryBank?.read()) ?? null;
    const started = await planWhilePreparing(loop, signal);
    if (started.kind === 'handed_off') return 'handed_off';
    if (started.kind === 'stop') return started.outcome;
    loop.move({ type: 'planned' });
    const preflight = await preflightCriteria(loop, signal);
    if (preflight.kind === 'stop') {
      await loop.firstDecision?.discard();
      return preflight.outcome;
    }
    // After a resume, the work already there is observed first: the Meta-agent decides on today's facts. A
    // follow-up starts from its instruction: every criterion is checked on the head its first validation sees.
    if (loop.options.previous && !followupToPlan(loop)) {
      const limit = loop.limitReached(signal);
      if (limit) return limit;
      const observed = await observeAndCheck(loop, signal);
      if ('kind' in observed && observed.kind === 'stop') return observed.outcome;
    }
    for (;;) {
      const next = await this.step(signal);
      if (next.kind === 'stop') return next.outcome;
    }
  }

  /** One decision of the Meta-agent, carried out, then the stall check. */
  private async step(signal: AbortSignal): Promise<Next> {
    const { loop } = this;
    const early = loop.firstDecision;
    loop.firstDecision = null;
    const limit = loop.limitReached(signal);
    if (limit) {
      await early?.discard();
      return stop(limit);
    }
    const { decision, usage } = await (early?.answer ??
      loop.deps.meta.nextAction(loop.view(), loop.callSignal(signal)));
    loop.ledger.countMeta(usage);
    loop.emit({ type: 'decision', decision, usage });
    loop.feedback.length = 0;
    const next = await this.carryOut(decision, signal);
    return next.kind === 'stop' ? next : this.stallCheck(decision, next.refusals);
  }

  private async carryOut(decision: MetaDecision, signal: AbortSignal): Promise<Next> {
    switch (decision.action) {
      case 'abort':
        return stop({ code: 'aborted', reason: decision.reason });
      case 'ask_human':
        return this.askHuman(decision);
      case 'mark_complete':
        return validate(this.loop, decision, signal);
      case 'run_worker':
        return runWorker(this.loop, decision, signal);
    }
  }

  private async askHuman(decision: MetaDecision): Promise<Next> {
    const { loop } = this;
    const question = askedQuestion(decision);
    const answer = loop.options.headless ? null : await loop.deps.human.ask(question);
    loop.emit({ type: 'human', question, answer });
    if (answer === null) {
      loop.question = question;
      return stop({ code: 'question', question });
    }
    loop.feedback.push(`The person was asked "${question}" and answered: ${answer}`);
    return goOn();
  }

  /**
   * The same refusal, or the same decision with no change in the facts, `limits.maxStalls` times in a row
   * ends the task: a model that repeats itself would otherwise burn the whole budget.
   */
  private stallCheck(decision: MetaDecision, refusals: string[]): Next {
    const { loop } = this;
    const repeats = this.stalls.observe(decision, loop.evidence?.fingerprint ?? '', refusals);
    if (repeats < loop.options.limits.maxStalls) return goOn(refusals);
    const what = stallDescription(decision, repeats, refusals);
    loop.emit({ type: 'stalled', repeats, what });
    return stop({ code: 'stalled', what });
  }
}
