/**
 * The review of a subtask, asked as early as it can be. A subtask's task ends COMPLETE only after the
 * Meta-agent's assessment, one model call after its checks passed; the review needs only what the checks
 * looked at (the branch's head, the DoD, the diff). So when a validation's facts show a clean tree, a DoD that
 * passed and no critical criterion check failing, the review of that head is asked at once, beside the
 * assessment. When the task ends COMPLETE on that same head, its review is taken; when the branch moved on (the
 * assessment sent the worker back), it is not (its spending counted, its event recorded with the head it
 * judged) and the final head is reviewed as before. A review asked for nothing costs one call; one taken
 * saves a model call's latency on every subtask's path. Imports ports only.
 */
import type { Ledger } from '../core/ledger.js';
import type { DodOutcome } from '../core/types.js';
import type { FactsForAssessment } from '../meta/meta-context.js';
import { blocksMerge, dodPassed } from './combined-check.js';
import type { IntegrationPort, ProjectMetaPort, SubtaskResult } from './ports.js';
import type { ProjectEvent, ReviewVerdict, SubtaskTaskEvent } from './project-events.js';
import type { SubtaskRecord } from './project-outcome.js';

interface RunSeen {
  headSha?: string;
  dirty?: boolean;
  dod?: DodOutcome;
}

/** Starts the review of a head (null when none may be asked now: the budget, an interrupt). */
export type StartReview = (headSha: string, dod: DodOutcome) => Promise<ReviewVerdict> | null;

/** Watches one attempt's task events and asks its review once its checks passed. */
export class EarlyReview {
  private readonly runs = new Map<number, RunSeen>();
  private pending: { headSha: string; answer: Promise<ReviewVerdict | null> } | null = null;

  constructor(private readonly start: StartReview) {}

  observe(event: SubtaskTaskEvent): void {
    if (event.type === 'facts') {
      this.runs.set(event.run, { headSha: event.facts.headSha, dirty: event.facts.dirty });
      return;
    }
    if (event.type === 'dod') {
      const seen = this.runs.get(event.run);
      if (seen) seen.dod = event.dod;
      return;
    }
    if (event.type !== 'criteria_checks') return;
    const seen = this.runs.get(event.run);
    if (!seen?.headSha || seen.dirty !== false || !seen.dod || !dodPassed(seen.dod)) return;
    if (event.results.some(blocksMerge) || this.pending?.headSha === seen.headSha) return;
    const answer = this.start(seen.headSha, seen.dod);
    if (!answer) return;
    this.pending = {
      headSha: seen.headSha,
      // A failed early review is not the subtask's failure: the final head is reviewed as before.
      answer: answer.then(
        (review) => review,
        () => null,
      ),
    };
  }

  /**
   * An early review asked (answered or not) and not taken yet: its subtask's checks passed and its assessment
   * is under way, so it is about to be ready to merge.
   */
  get expected(): boolean {
    return this.pending !== null;
  }

  /**
   * The review of `headSha` asked early (null: none, or a failed one); taken once. One of another head (or of
   * a subtask that did not complete, `null`) is waited for, not taken: its spending is counted before the
   * project's outcome is.
   */
  async take(headSha: string | null): Promise<ReviewVerdict | null> {
    const pending = this.pending;
    this.pending = null;
    if (!pending) return null;
    if (headSha === null || pending.headSha !== headSha) {
      await pending.answer;
      return null;
    }
    return pending.answer;
  }
}

/** The Meta-agent as a subtask's reviewer: the evidence, the call, its spending and its event. */
export class SubtaskReviewer {
  constructor(
    private readonly deps: {
      meta: ProjectMetaPort;
      integration: IntegrationPort;
      ledger: Ledger;
      emit(event: ProjectEvent): void;
    },
  ) {}

  /** The review of a head whose checks passed, asked beside the assessment. */
  async early(
    record: SubtaskRecord,
    base: string,
    headSha: string,
    dod: DodOutcome,
    signal?: AbortSignal,
  ): Promise<ReviewVerdict> {
    const evidence: FactsForAssessment = {
      summary: `Subtask ${record.subtask.id}: a worker run's commits passed its checks (the Definition of Done and its criteria checks, on a clean tree); its branch is at ${headSha}. Asked while the Meta-agent judges its criteria: the subtask is merged only if it ends COMPLETE on this same commit.`,
      dodResults: dod.results,
      diff: await this.deps.integration.diff(base, headSha),
    };
    return this.review(record, evidence, headSha, signal);
  }

  /** The review of the head a subtask ended COMPLETE on. */
  async final(
    record: SubtaskRecord,
    base: string,
    result: SubtaskResult,
    signal?: AbortSignal,
  ): Promise<ReviewVerdict> {
    const { summary } = result;
    const evidence: FactsForAssessment = {
      summary: `Subtask ${record.subtask.id} ended ${summary.state} after ${summary.runs} worker run(s): ${summary.reason}. Its branch ${summary.branch} is at ${summary.headSha ?? 'unknown'}.`,
      dodResults: result.dod?.results ?? [],
      diff: await this.deps.integration.diff(base, summary.branch),
      ...(result.workerSummary ? { workerSummary: result.workerSummary } : {}),
    };
    return this.review(record, evidence, summary.headSha, signal);
  }

  private async review(
    record: SubtaskRecord,
    evidence: FactsForAssessment,
    headSha: string | null,
    signal?: AbortSignal,
  ): Promise<ReviewVerdict> {
    const reviewed = await this.deps.meta.review({
      taskId: record.taskId,
      subtask: record.subtask,
      evidence,
      ...(signal ? { signal } : {}),
    });
    this.deps.ledger.countMeta(reviewed.usage);
    this.deps.emit({
      type: 'review',
      subtask: record.subtask.id,
      taskId: record.taskId,
      review: reviewed.review,
      usage: reviewed.usage,
      ...(headSha ? { headSha } : {}),
    });
    return reviewed.review;
  }
}
