/**
 * The orchestrator of parallel work: runs a plan of subtasks to the end. The scheduler says which subtasks
 * start; each runs as a whole task from the integration branch's head; a subtask whose gate passed is
 * reviewed, then merged by the merge train (merge-train.ts: the reviewed subtasks waiting together merge as
 * one candidate with one combined check, a red batch is bisected; a subtask starts only after its blockers
 * merged). The combined check is the DoD and every merged subtask's acceptance criteria checks on the same
 * tree: a subtask's promise must hold on the final tree, not only on its branch. A subtask red on the combined
 * tree gets one fix-up task on the integration branch (the Meta-agent instructs its worker), which is reviewed
 * like a subtask (the reviewer is told whose work it changed, deletions first); when that fails too, the
 * merge is taken back and the subtask is planned again, as after a conflict or an `ng` review. A subtask
 * that fails stops only what waits for it. Imports ports only.
 */
import type { Clock } from '../core/ports.js';
import type { Ledger } from '../core/ledger.js';
import { limitMessage } from '../core/limits.js';
import type { ReviewFinding } from '../protocol/review.js';
import type {
  IntegrationPort,
  ProjectMetaPort,
  SubtaskCriteria,
  SubtaskResult,
  SubtaskRunnerPort,
} from './ports.js';
import type { CombinedCheck, PlannedSubtask, ProjectEvent, SubtaskTaskEvent } from './project-events.js';
import { combinedPassed, combinedReport, combinedStatus } from './combined-check.js';
import { runFixup } from './fixup-task.js';
import { MergeTrain } from './merge-train.js';
import { EarlyReview, SubtaskReviewer } from './subtask-review.js';
import { schedule, type SubtaskState } from './scheduler.js';

import {
  initialRecords,
  type FixupReview,
  projectOutcome,
  type MergeLogEntry,
  type ProjectOutcome,
  type SubtaskRecord,
} from './project-outcome.js';
import { replannedPrd } from './subtask-texts.js';

export interface OrchestratorOptions {
  taskId: string;
  prd: string;
  subtasks: PlannedSubtask[];
  max: number;
  /** Attempts of one subtask after the first (re-plans after ng, conflict or an irreparable merge). */
  maxReplans: number;
  /** Fix-up tasks per merge whose combined DoD is red. */
  maxFixups: number;
  /** How long an idle merge train waits at most for the reviews under way (default 0: it leaves at once). */
  gatherMs?: number;
  /** Earlier state of a resumed project: subtasks already merged stay merged. */
  merged?: string[];
  /** Earlier state of a resumed project: the attempt each re-planned subtask is at. */
  attempts?: Record<string, number>;
}

export interface OrchestratorDeps {
  runner: SubtaskRunnerPort;
  integration: IntegrationPort;
  meta: ProjectMetaPort;
  clock: Clock;
  /**
   * The project's ledger: its limits, what was spent before (the planning call, earlier attempts), its own
   * calls, and every subtask's spending as it happens (each subtask's ledger has it as parent).
   */
  ledger: Ledger;
  emit(event: ProjectEvent | SubtaskTaskEvent): void;
}

export class ProjectOrchestrator {
  private readonly records = new Map<string, SubtaskRecord>();
  private readonly merges: MergeLogEntry[] = [];
  private readonly fixupReviews: FixupReview[] = [];
  /** The check of the integration head as it stands (after a revert: the check of the head that remains). */
  private combined: CombinedCheck | null = null;
  private readonly checksByHead = new Map<string, CombinedCheck>();
  private readonly train: MergeTrain;
  /** Each running subtask's review asked as soon as its checks passed. */
  private readonly earlyReviews = new Map<string, EarlyReview>();
  private readonly reviewer: SubtaskReviewer;
  private wake: () => void = () => {};
  private changed: Promise<void> = Promise.resolve();
  private stopReason: string | null = null;
  private fixups = 0;
  private readonly lastWait = new Map<string, string>();

  constructor(
    private readonly options: OrchestratorOptions,
    private readonly deps: OrchestratorDeps,
  ) {
    for (const record of initialRecords(options)) this.records.set(record.subtask.id, record);
    this.arm();
    this.reviewer = new SubtaskReviewer(deps);
    this.train = new MergeTrain(
      {
        integration: deps.integration,
        check: (label, cars, signal) => this.checkCombined(label, cars, signal),
        repair: (car, red, signal) => this.repair(car, red, signal),
        logMerge: (entry) => this.logMerge(entry),
        inReview: () =>
          [...this.records.values()].filter(
            (record) =>
              record.state === 'reviewing' || this.earlyReviews.get(record.subtask.id)?.expected === true,
          ).length,
        merged: (cars, check) => {
          const reason = `merged at ${check.headSha.slice(0, 12)}; combined check ${combinedStatus(check)}`;
          for (const car of cars) this.finishRecord(car, 'merged', reason);
        },
        reverted: (sha) => {
          this.combined = this.checksByHead.get(sha) ?? null;
          const last = this.merges.at(-1);
          if (last && this.combined) last.check = this.combined;
        },
        conflicted: (car, files, signal) =>
          this.replan(
            car,
            [],
            `merging agent-runner/${car.taskId} into ${deps.integration.branch} conflicted in ${files.join(', ') || 'some files'}; start again from the integration branch as it is now`,
            signal,
          ),
        rejected: (car, red, signal) =>
          this.replan(
            car,
            [],
            `after merging it the combined tree failed (the Definition of Done or a merged subtask's acceptance check) and no fix-up repaired it:\n${combinedReport(red)}`,
            signal,
          ),
      },
      options.gatherMs ?? 0,
    );
  }

  /** Runs every subtask to merged, failed or skipped. Never throws for a subtask's failure. */
  async run(signal?: AbortSignal): Promise<ProjectOutcome> {
    this.deps.ledger.start();
    const baseFiles = await this.deps.integration.baseFiles();
    const inflight = new Set<Promise<void>>();
    for (;;) {
      if (signal?.aborted) this.stopReason ??= 'interrupted';
      this.stopReason ??= this.budgetSpent();
      const states = Object.fromEntries([...this.records].map(([id, record]) => [id, record.state]));
      const decision = schedule({
        subtasks: this.options.subtasks,
        states,
        max: this.options.max,
        baseFiles,
      });
      for (const skip of decision.skip) this.setState(skip.id, 'skipped', skip.reason);
      for (const wait of decision.waits) {
        if (this.lastWait.get(wait.id) === wait.reason) continue;
        this.lastWait.set(wait.id, wait.reason);
        this.deps.emit({ type: 'subtask_waiting', subtask: wait.id, kind: wait.kind, reason: wait.reason });
      }
      if (this.stopReason === null) {
        for (const id of decision.start) {
          this.lastWait.delete(id);
          // Before any await: the next round of the loop must see it running, not start it again.
          this.setState(id, 'running', 'starting from the integration branch');
          const promise: Promise<void> = this.runSubtask(id, signal).finally(() => inflight.delete(promise));
          inflight.add(promise);
        }
      }
      if (decision.skip.length > 0) continue;
      if (inflight.size === 0) break;
      await Promise.race([...inflight, this.changed]);
    }
    return this.outcome();
  }

  private async runSubtask(id: string, signal?: AbortSignal): Promise<void> {
    const record = this.record(id);
    record.startedAt ??= this.deps.clock.now();
    const base = await this.deps.integration.head();
    const early = new EarlyReview((headSha, dod) =>
      signal?.aborted || this.stopReason || this.budgetSpent()
        ? null
        : this.reviewer.early(record, base, headSha, dod, signal),
    );
    this.earlyReviews.set(id, early);
    let result: SubtaskResult;
    try {
      result = await this.deps.runner.run({
        taskId: record.taskId,
        subtask: id,
        prd: record.subtask.prd,
        plan: record.subtask.plan,
        base,
        writeScope: record.subtask.writeScope,
        readScope: record.subtask.readScope,
        limits: this.deps.ledger.remaining(),
        parent: this.deps.ledger,
        onEvent: (event) => {
          this.deps.emit(event);
          early.observe(event);
        },
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      this.finishRecord(record, 'failed', `could not run: ${(error as Error).message}`);
      return;
    } finally {
      this.earlyReviews.delete(id);
    }
    const summary = result.summary;
    record.attempts.push(summary);
    this.deps.emit({ type: 'subtask_finished', subtask: id, taskId: record.taskId, summary });
    if (summary.state !== 'COMPLETE') {
      await early.take(null);
      this.finishRecord(record, 'failed', `${summary.state}: ${summary.reason}`);
      return;
    }
    this.setState(id, 'reviewing', 'gate passed');
    let review = await early.take(summary.headSha);
    if (!review) {
      // The review is a Meta-agent call too: none once the project's budget is spent.
      if (!signal?.aborted) this.stopReason ??= this.budgetSpent();
      if (signal?.aborted || this.stopReason) {
        this.finishRecord(record, 'failed', `not merged: ${this.stopReason ?? 'interrupted'}`);
        return;
      }
      try {
        review = await this.reviewer.final(record, base, result, signal);
      } catch (error) {
        this.finishRecord(record, 'failed', `the review failed: ${(error as Error).message}`);
        return;
      }
    }
    record.reviews.push(review);
    if (review.verdict === 'ng') {
      await this.replan(record, review.findings, `the review said ng: ${review.summary}`, signal);
      return;
    }
    this.setState(id, 'merging', 'review ok; in the merge train');
    await this.train.enqueue(record, signal);
  }

  /**
   * The combined check of the integration head: the DoD, and the criteria of every merged subtask and of
   * `cars` (being merged now). Recorded by head, so a revert reports the check of the head that remains.
   */
  private async checkCombined(
    label: string,
    cars: readonly SubtaskRecord[],
    signal?: AbortSignal,
  ): Promise<CombinedCheck> {
    const checked = [...this.records.values()].filter(
      (record) => record.state === 'merged' || cars.includes(record),
    );
    const criteria: SubtaskCriteria[] = checked.map((record) => ({
      subtask: record.subtask.id,
      criteria: record.subtask.plan.acceptanceCriteria,
    }));
    const check = await this.deps.integration.combinedCheck(label, criteria, signal);
    this.combined = check;
    this.checksByHead.set(check.headSha, check);
    this.deps.emit({ type: 'combined_dod', ...check });
    for (const entry of this.merges)
      if (entry.sha === check.headSha && entry.status !== 'reverted') entry.check = check;
    return check;
  }

  /** Fix-ups for a subtask red on the combined tree, each checked again; the last check, passed or not. */
  private async repair(
    record: SubtaskRecord,
    red: CombinedCheck,
    signal?: AbortSignal,
  ): Promise<CombinedCheck> {
    let check = red;
    for (let fixup = 1; !combinedPassed(check) && fixup <= this.options.maxFixups; fixup += 1) {
      if (signal?.aborted || this.stopReason) break;
      const repaired = await this.fixup(record, check, signal);
      if (!repaired) break;
      check = await this.checkCombined(`${record.subtask.id} + fix-up`, [record], signal);
    }
    return check;
  }

  /** The next fix-up task for `record`, red on the combined tree (fixup-task.ts); true when it merged. */
  private async fixup(record: SubtaskRecord, red: CombinedCheck, signal?: AbortSignal): Promise<boolean> {
    this.fixups += 1;
    return runFixup(this.deps, {
      number: this.fixups,
      projectTaskId: this.options.taskId,
      projectPrd: this.options.prd,
      record,
      red,
      scope: [...new Set(this.options.subtasks.flatMap((planned) => planned.writeScope))],
      merged: [...this.records.values()]
        .filter((other) => other.state === 'merged' || other === record)
        .map((other) => other.subtask),
      logMerge: (entry) => this.logMerge(entry),
      reviewed: (review) => this.fixupReviews.push(review),
      ...(signal ? { signal } : {}),
    });
  }

  /** Plans the subtask again (new criteria from the Meta-agent) and puts it back in the queue, or fails it. */
  private async replan(
    record: SubtaskRecord,
    findings: ReviewFinding[],
    reason: string,
    signal?: AbortSignal,
  ): Promise<void> {
    // Planning again is a Meta-agent call too: none once the project's budget is spent.
    if (!signal?.aborted) this.stopReason ??= this.budgetSpent();
    if (record.attempt > this.options.maxReplans || signal?.aborted || this.stopReason) {
      this.finishRecord(record, 'failed', `not merged after ${record.attempt} attempt(s): ${reason}`);
      return;
    }
    try {
      const { plan, usage } = await this.deps.meta.replan({
        taskId: record.taskId,
        subtask: record.subtask,
        findings,
        reason,
        ...(signal ? { signal } : {}),
      });
      this.deps.ledger.countMeta(usage);
      record.attempt += 1;
      record.taskId = `${this.options.taskId}--${record.subtask.id}-r${record.attempt}`;
      record.subtask = { ...record.subtask, plan, prd: replannedPrd(record.subtask.prd, reason, findings) };
      this.deps.emit({
        type: 'replan',
        subtask: record.subtask.id,
        attempt: record.attempt,
        reason,
        plan,
        prd: record.subtask.prd,
        usage,
      });
      this.setState(record.subtask.id, 'waiting', `planned again (attempt ${record.attempt})`);
    } catch (error) {
      this.finishRecord(record, 'failed', `re-planning failed: ${(error as Error).message}`);
    }
  }

  private logMerge(entry: MergeLogEntry): void {
    this.merges.push(entry);
    this.deps.emit({
      type: 'merge',
      subtask: entry.subtask,
      branch: entry.branch,
      status: entry.status,
      sha: entry.sha,
      ...(entry.files ? { files: entry.files } : {}),
    });
  }

  private record(id: string): SubtaskRecord {
    const record = this.records.get(id);
    if (!record) throw new Error(`unknown subtask ${id}`);
    return record;
  }

  private finishRecord(record: SubtaskRecord, state: SubtaskState, reason: string): void {
    record.finishedAt = this.deps.clock.now();
    this.setState(record.subtask.id, state, reason);
  }

  private setState(id: string, state: SubtaskState, reason: string): void {
    const record = this.record(id);
    record.state = state;
    record.reason = reason;
    this.deps.emit({
      type: 'subtask_state',
      subtask: id,
      state,
      attempt: record.attempt,
      taskId: record.taskId,
      reason,
    });
    this.wake();
    this.arm();
  }

  /** Why the project's budget is spent, in words, or null while it is not. */
  private budgetSpent(): string | null {
    const reached = this.deps.ledger.exhausted();
    return reached ? limitMessage(reached) : null;
  }

  private arm(): void {
    this.changed = new Promise((resolve) => (this.wake = resolve));
  }

  private async outcome(): Promise<ProjectOutcome> {
    return projectOutcome({
      subtasks: [...this.records.values()],
      merges: this.merges,
      fixupReviews: this.fixupReviews,
      combined: this.combined,
      headSha: await this.deps.integration.head(),
      usage: this.deps.ledger.usage(),
      metaCalls: this.deps.ledger.metaCalls,
      stopReason: this.stopReason,
    });
  }
}
