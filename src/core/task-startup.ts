/**
 * The start of a task: planning needs only the PRD, the config and the memory, so the Meta-agent is asked (or
 * the plan given from outside awaited) while the sandbox session prepares the workspace and starts the
 * sandbox. A failure on either side stops the other: a failed preparation aborts the planning request; a
 * failed planning (or a hand-off) keeps the sandbox from being created or set up, and the session removes
 * what it started. Events keep their order: task, sandbox, plan.
 */
import { EnvironmentError } from '../errors.js';
import { failureHint } from './failure-hints.js';
import { followupToPlan, recordPlanChanges, revisePlan } from './followup-step.js';
import { goOn, stop, type Next } from './outcome.js';
import type { GivenPlan, MissingProgram } from './ports.js';
import { startSandboxSession } from './sandbox-session.js';
import type { EarlyDecision, TaskLoop } from './task-loop.js';

/** The planner split the work while this task prepared: it ends here, unrun (see `givenPlan`). */
export interface HandedOff {
  kind: 'handed_off';
}

type Planned = (GivenPlan & { kind: 'plan'; asked: boolean }) | HandedOff | null;

/** Plans (unless the task has its plan) while the sandbox session starts; throws what failed first. */
export async function planWhilePreparing(loop: TaskLoop, signal?: AbortSignal): Promise<Next | HandedOff> {
  if (!loop.plan) {
    const limit = loop.limitReached(signal);
    if (limit) return stop(limit);
  }
  const stopPlanning = new AbortController();
  const planSignal = signal ? AbortSignal.any([signal, stopPlanning.signal]) : stopPlanning.signal;
  // The first failure (or the hand-off) wins: the other side's error is only the consequence of being stopped.
  const first: { failed: boolean; error: unknown } = { failed: false, error: null };
  const failed = (error: unknown): never => {
    if (!first.failed) Object.assign(first, { failed: true, error });
    throw error;
  };
  // Planning that failed (or handed off) also stops a baseline still running on the prepared side.
  const stopPreparing = new AbortController();
  const prepareSignal = signal ? AbortSignal.any([signal, stopPreparing.signal]) : stopPreparing.signal;
  let ready = false;
  let early: EarlyDecision | null = null;
  const planning = askForPlan(loop, planSignal).then(
    (planned) => {
      if (planned?.kind === 'handed_off') {
        stopPreparing.abort();
        failed(planned);
      }
      // The plan is known and the sandbox is not: the first decision needs only the plan, so it is asked now.
      if (planned?.kind === 'plan' && !ready && !first.failed) early = askEarly(loop, planned, planSignal);
      return planned;
    },
    (error: unknown) => {
      stopPreparing.abort();
      return failed(error);
    },
  );
  const preparing = startSession(
    loop,
    () => (first.failed ? { error: first.error } : null),
    prepareSignal,
  ).then(
    () => {
      ready = true;
    },
    (error: unknown) => {
      stopPlanning.abort();
      return failed(error);
    },
  );
  const [planned] = await Promise.allSettled([planning, preparing]);
  const asked = early as EarlyDecision | null;
  if (first.failed) await asked?.discard();
  else loop.firstDecision = asked;
  if (first.failed) {
    if ((first.error as HandedOff | null)?.kind === 'handed_off') return first.error as HandedOff;
    throw first.error;
  }
  if (planned.status === 'fulfilled' && planned.value && planned.value.kind !== 'handed_off')
    takePlan(loop, planned.value);
  return goOn();
}

/**
 * The first decision, asked beside the sandbox's preparation (a subtask's plan is given at once; an asked plan
 * may come back before a slow set-up is done). Not on resume (the work there is observed first), and not when
 * the Meta-agent calls left would not cover it.
 */
function askEarly(
  loop: TaskLoop,
  planned: GivenPlan & { asked: boolean },
  signal: AbortSignal,
): EarlyDecision | null {
  if (loop.options.previous || loop.limitReached(signal)) return null;
  const needed = planned.asked ? 2 : 1;
  if (loop.ledger.remaining().maxMetaCalls < needed) return null;
  const stopped = new AbortController();
  const answer = loop.deps.meta.nextAction(
    loop.view(planned.plan),
    loop.callSignal(AbortSignal.any([signal, stopped.signal])),
  );
  // Taken by the first step, or discarded; a failure is the first step's to report.
  answer.catch(() => undefined);
  return {
    answer,
    async discard() {
      stopped.abort();
      const settled = await answer.then(
        (value) => value,
        () => null,
      );
      if (settled) loop.ledger.countMeta(settled.usage);
    },
  };
}

function askForPlan(loop: TaskLoop, signal: AbortSignal): Promise<Planned> {
  if (loop.plan) return Promise.resolve(null);
  if (followupToPlan(loop))
    return revisePlan(loop, signal).then((revised) => ({ ...revised, kind: 'plan' as const, asked: true }));
  const given = loop.options.previous ? undefined : loop.options.givenPlan;
  if (given)
    return given.then((answer) =>
      'handedOff' in answer
        ? { kind: 'handed_off' as const }
        : { ...answer, kind: 'plan' as const, asked: false },
    );
  return loop.deps.meta
    .plan({
      taskId: loop.options.taskId,
      prd: loop.options.prd,
      memory: loop.memory,
      ...(loop.decisions ? { decisions: loop.decisions } : {}),
      signal: loop.callSignal(signal),
    })
    .then((answer) => ({ ...answer, kind: 'plan' as const, metaCalls: 1, asked: true }));
}

function startSession(
  loop: TaskLoop,
  abandoned: () => { error: unknown } | null,
  signal: AbortSignal,
): Promise<void> {
  const { options } = loop;
  return startSandboxSession(loop.deps.workspace, loop.deps.sandboxes, {
    onPrepared: (task) => {
      loop.task = task;
      loop.emit({
        type: 'task_started',
        taskId: options.taskId,
        branch: task.branch,
        baseSha: task.baseSha,
        worktreePath: task.worktreePath,
        dirtyStart: task.dirtyStart,
        ...(options.startOptions ? { options: options.startOptions } : {}),
      });
    },
    abandoned,
  }).then(async (session) => {
    loop.sandboxId = session.sandboxId;
    const runtime = loop.deps.sandboxes.sandboxRuntime?.();
    loop.emit({ type: 'sandbox_started', sandboxId: session.sandboxId, ...(runtime ? { runtime } : {}) });
    if (!abandoned()) await runBaseline(loop, session.sandboxId, signal);
  });
}

/**
 * The baseline (src/core/baseline.ts): the DoD once on the base tree, in the sandbox just set up, before any
 * worker run and beside planning. A resumed task takes the first attempt's from the journal instead. With the
 * person's uncommitted changes carried in (a dirty start) it ran on them too, and says so (`ranOnDirtyTree`).
 */
async function runBaseline(loop: TaskLoop, sandboxId: string, signal: AbortSignal): Promise<void> {
  const { options, task } = loop;
  // Preflight first: a check whose program the sandbox lacks ends the task before anything else runs.
  if (!options.dodSkipped) {
    const missing = await loop.deps.workspace.missingPrograms(sandboxId, undefined, signal);
    if (missing.length > 0) throw preflightError(missing);
  }
  if (options.previous) loop.baseline = options.previous.baseline ?? null;
  else if (options.baseline?.mode === 'auto' && !options.dodSkipped && task) {
    const dod = await loop.deps.workspace.runDod(sandboxId, { dirty: task.dirtyStart }, loop.bounds(signal), {
      warmCaches: true,
    });
    // Cut short (Ctrl-C, the wall clock, planning failed): no baseline rather than a false one.
    if (signal.aborted || loop.deps.clock.now() >= loop.ledger.deadline()) return;
    if (dod.results.length > 0) {
      loop.baseline = { baseSha: task.baseSha, dod };
      loop.emit({ type: 'baseline', ...loop.baseline });
    }
  }
  // Still before any worker run: what set-up and the baseline (code the worker never touched) cached is sealed.
  if (!options.dodSkipped && !signal.aborted) await loop.deps.workspace.sealCheckCaches(sandboxId, signal);
}

function takePlan(loop: TaskLoop, planned: GivenPlan & { asked: boolean }): void {
  const { plan, usage, metaCalls, asked } = planned;
  // A plan made outside the task counts as the task's own, not again where it was made (a project's count).
  loop.ledger.countMeta(usage, asked ? {} : { calls: metaCalls, shared: false });
  loop.plan = plan;
  loop.emit({ type: 'plan', plan, usage });
  recordPlanChanges(loop);
}

/**
 * After the plan, before the first worker run: the acceptance criteria's command checks whose program the
 * sandbox lacks end the task at once, as a DoD check's do (a check that could only ever exit 127).
 */
export async function preflightCriteria(loop: TaskLoop, signal?: AbortSignal): Promise<Next> {
  const { sandboxId, plan } = loop;
  // A resumed task's criteria were preflighted when it planned; a follow-up's revised plan is new.
  if (!sandboxId || !plan || (loop.options.previous && !followupToPlan(loop))) return goOn();
  const commands = plan.acceptanceCriteria.flatMap((criterion) =>
    criterion.check?.kind === 'command' && criterion.check.command
      ? [{ label: `criterion ${criterion.id}'s command check`, command: criterion.check.command }]
      : [],
  );
  if (commands.length === 0) return goOn();
  const missing = await loop.deps.workspace.missingPrograms(sandboxId, commands, signal);
  return missing.length > 0 ? stop({ code: 'error', error: preflightError(missing) }) : goOn();
}

/** One message for every missing program: which check runs it, and the fix. */
export function preflightError(missing: readonly MissingProgram[]): EnvironmentError {
  const programs = [...new Set(missing.map((item) => item.program))];
  const uses = missing.map((item) => `${item.label} (\`${item.command}\`)`).join(', ');
  const hint =
    failureHint({ output: `${programs[0]}: command not found`, exitCode: 127, timedOut: false }, 'check') ??
    '';
  return new EnvironmentError(
    'preflight_failed',
    `preflight: ${programs.map((program) => `\`${program}\``).join(', ')} not found in the sandbox, which ` +
      `${uses} ${missing.length === 1 ? 'runs' : 'run'}; no worker ran. ${hint}` +
      ' Or set dod.checks to commands the image has.',
    { details: { missing } },
  );
}
