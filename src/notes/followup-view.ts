/**
 * The note's "Follow-up N" section (src/core/followup.ts): the person's instruction quoted as data, what the
 * follow-up committed, how the plan was revised (and which held criteria the runner kept against the reply),
 * the criteria before and after, and what the task spent before the follow-up, shown apart from its own.
 * Every text is escaped and bounded like the rest of the view (the record arrives redacted).
 */
import { describePlanChanges } from '../core/followup.js';
import type { TaskRecord } from '../core/task-record.js';
import type { CriterionEvidence, TaskFacts } from '../core/types.js';
import { totalTokens } from '../core/usage.js';
import { NOTE_LIMITS, codeSpan, cutList, fencedBlock, inlineText } from './markdown-text.js';

/** Commits after `fromSha` in a newest-first list (all of them when it is not in the list: the base). */
function commitsSince(facts: TaskFacts | undefined, fromSha: string | null): TaskFacts['commits'] {
  const commits = facts?.commits ?? [];
  const at = fromSha === null ? -1 : commits.findIndex((commit) => commit.sha === fromSha);
  return at === -1 ? commits : commits.slice(0, at);
}

/** The section's view, or `followup: null` for a task's first run. */
export function followupView(
  record: TaskRecord,
  lastFacts: TaskFacts | undefined,
  criterionRow: (criterion: CriterionEvidence) => Record<string, unknown>,
): { followup: Record<string, unknown> | null } {
  const followup = record.followup;
  if (!followup) return { followup: null };
  const commits = cutList(commitsSince(lastFacts, followup.fromSha), NOTE_LIMITS.listItems, 'commits');
  const earlier = followup.earlier;
  const usd = earlier.usage.total.costUsd;
  return {
    followup: {
      number: followup.number,
      instruction: fencedBlock(followup.instruction),
      fromSha: codeSpan((followup.fromSha ?? '(none)').slice(0, 10)),
      commits: commits.items.map((commit) => ({
        sha: codeSpan(commit.sha.slice(0, 10)),
        subject: inlineText(commit.subject, NOTE_LIMITS.code),
      })),
      commitsCut: commits.notice,
      changes: followup.changes ? describePlanChanges(followup.changes).map((line) => inlineText(line)) : [],
      planned: Boolean(followup.changes),
      before: followup.before.map(criterionRow),
      after: record.criteria.map(criterionRow),
      earlier: {
        runs: earlier.runs,
        metaCalls: earlier.metaCalls,
        tokens: totalTokens(earlier.usage.total),
        cost: usd > 0 ? `$${usd.toFixed(4)}` : 'not priced',
      },
    },
  };
}
