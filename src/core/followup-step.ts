/**
 * The start of a follow-up (src/core/followup.ts): it is recorded with the criteria it starts from, and its
 * plan is the Meta-agent's revision merged with the earlier criteria by the runner's rule, so a reply that
 * drops or rewrites a criterion that held changes nothing of it.
 */
import { describePlanChanges, heldCriteria, mergeFollowupPlan } from './followup.js';
import type { GivenPlan } from './ports.js';
import type { TaskLoop } from './task-loop.js';

/** Records a new follow-up before anything of it runs (the journal's fold counts its spending from here). */
export function announceFollowup(loop: TaskLoop): void {
  const followup = loop.options.followup;
  if (followup?.stage !== 'new') return;
  const { number, instruction, fromSha, before, earlier } = followup;
  loop.emit({ type: 'followup_started', number, instruction, fromSha, before, earlier });
}

/** Whether the task's plan is the follow-up's to revise now. */
export function followupToPlan(loop: TaskLoop): boolean {
  const stage = loop.options.followup?.stage;
  return Boolean(loop.options.previous) && (stage === 'new' || stage === 'unplanned');
}

/** Asks the Meta-agent to revise the plan with the instruction, and merges its reply (one Meta-agent call). */
export async function revisePlan(loop: TaskLoop, signal: AbortSignal): Promise<GivenPlan> {
  const { followup, previous } = loop.options;
  if (!followup || !previous) throw new Error('a plan revision without a follow-up');
  const { plan: reply, usage } = await loop.deps.meta.plan({
    taskId: loop.options.taskId,
    prd: loop.options.prd,
    memory: loop.memory,
    ...(loop.decisions ? { decisions: loop.decisions } : {}),
    followup: { number: followup.number, instruction: followup.instruction, criteria: followup.before },
    signal: loop.callSignal(signal),
  });
  const { criteria, changes } = mergeFollowupPlan(
    previous.plan.acceptanceCriteria,
    heldCriteria(followup.before),
    reply.acceptanceCriteria,
  );
  loop.followupChanges = changes;
  // The next decision hears what the runner kept, so it does not plan around a criterion it meant to drop.
  loop.feedback.push(
    ...describePlanChanges(changes).map((line) => `Follow-up ${followup.number}, the plan: ${line}.`),
  );
  return { plan: { title: previous.plan.title, acceptanceCriteria: criteria }, usage, metaCalls: 1 };
}

/** Records how the plan was revised, after the plan itself. */
export function recordPlanChanges(loop: TaskLoop): void {
  const { followup } = loop.options;
  if (followup && loop.followupChanges && followup.stage !== 'planned')
    loop.emit({ type: 'followup_planned', number: followup.number, changes: loop.followupChanges });
}
