/**
 * A follow-up: an ended task continued on its own branch with a person's new instruction. The Meta-agent
 * revises the plan (`plan_task` with the earlier criteria, their evidence and the instruction), and the runner
 * merges its reply with the earlier criteria by one pure rule: a criterion that held is kept exactly as it was
 * (a reply that drops or changes it cannot lower the bar), a criterion that did not hold may be revised, new
 * ids are added, and nothing is dropped.
 */
import type { AcceptanceCriterion } from '../protocol/messages.js';
import type { CriterionEvidence, FollowupPlanChanges } from './types.js';

/** What the Meta-agent is given to revise a plan: the follow-up's number, the instruction, the criteria so far. */
export interface FollowupContext {
  number: number;
  instruction: string;
  criteria: readonly CriterionEvidence[];
}

/**
 * The criteria that held when the task ended: assessed passed, and their check (when one ran) passed on the
 * head the task ended on. Only these are protected; a criterion that never held may be revised.
 */
export function heldCriteria(criteria: readonly CriterionEvidence[]): Set<string> {
  return new Set(
    criteria
      .filter(
        (criterion) =>
          criterion.status === 'passed' &&
          (criterion.checkResult === null || criterion.checkResult.status === 'passed'),
      )
      .map((criterion) => criterion.id),
  );
}

/** Plain JSON of a criterion with its keys sorted and absent fields left out: two equal criteria, one text. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(
          Object.entries(item as Record<string, unknown>)
            .filter(([, field]) => field !== undefined)
            .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0)),
        )
      : item,
  );
}

/** Whether two criteria say exactly the same (id, description, type, critical, check). */
export function sameCriterion(left: AcceptanceCriterion, right: AcceptanceCriterion): boolean {
  return canonical(left) === canonical(right);
}

/**
 * The revised plan of a follow-up: the earlier criteria in their order (a held one exactly as it was, one that
 * did not hold as the reply revised it, or as it was when the reply left it out), then the reply's new ids in
 * its order. Pure.
 */
export function mergeFollowupPlan(
  earlier: readonly AcceptanceCriterion[],
  held: ReadonlySet<string>,
  reply: readonly AcceptanceCriterion[],
): { criteria: AcceptanceCriterion[]; changes: FollowupPlanChanges } {
  const changes: FollowupPlanChanges = { added: [], revised: [], protected: [], carried: [] };
  const replied = new Map(reply.map((criterion) => [criterion.id, criterion]));
  const criteria = earlier.map((criterion) => {
    const revision = replied.get(criterion.id);
    if (held.has(criterion.id)) {
      if (!revision) changes.protected.push({ id: criterion.id, why: 'missing' });
      else if (!sameCriterion(revision, criterion))
        changes.protected.push({ id: criterion.id, why: 'changed' });
      return criterion;
    }
    if (!revision) {
      changes.carried.push(criterion.id);
      return criterion;
    }
    if (!sameCriterion(revision, criterion)) changes.revised.push(criterion.id);
    return revision;
  });
  const known = new Set(earlier.map((criterion) => criterion.id));
  for (const criterion of reply) {
    if (known.has(criterion.id)) continue;
    changes.added.push(criterion.id);
    criteria.push(criterion);
  }
  return { criteria, changes };
}

/** The merge in words, one line per change, for the note and the Meta-agent's feedback. */
export function describePlanChanges(changes: FollowupPlanChanges): string[] {
  return [
    ...changes.protected.map(
      ({ id, why }) =>
        `${id} held before and was kept as it was: the revised plan ${why === 'missing' ? 'left it out' : 'changed it'}, and a follow-up cannot remove or weaken a criterion that held`,
    ),
    ...changes.carried.map((id) => `${id} had not held and was kept as it was: the revised plan left it out`),
    ...(changes.revised.length ? [`revised (had not held): ${changes.revised.join(', ')}`] : []),
    ...(changes.added.length ? [`added: ${changes.added.join(', ')}`] : []),
  ];
}
