/**
 * The orchestrator of parallel work: runs a plan of subtasks to the end. The scheduler says which subtasks
 * start; each runs as a whole task from the integration branch's head; a subtask whose gate passed is
 * reviewed, then merged by a queue (one merge at a time, so in dependency order: a subtask starts only after
 * its blockers merged); after every merge the DoD runs on the combined tree. A red combined DoD gets one
 * fix-up task on the integration branch (the Meta-agent instructs its worker); when that fails too, the merge
 * is taken back and the subtask is planned again, as after a conflict or an `ng` review. A subtask that fails
 * stops only what waits for it. Imports ports only.
 */
import type { Clock } from '../core/ports.js';
import type { DodOutcome } from '../core/types.js';
import type { Ledger } from '../core/ledger.js';
import { limitMessage } from '../core/limits.js';
import type { FactsForAssessment } from '../meta/meta-context.js';
import type { ReviewFinding } from '../protocol/review.js';
import type { IntegrationPort, ProjectMetaPort, SubtaskResult, SubtaskRunnerPort } from './ports.js';
import type { PlannedSubtask, ProjectEvent, ReviewVerdict, SubtaskTaskEvent } from './project-events.js';
import { schedule, type SubtaskState } from './scheduler.js';

import {
  initialRecords,
  projectOutcome,
  type MergeLogEntry,
  type ProjectOutcome,
  type SubtaskRecord,
} from './project-outcome.js';
import { dodReport, fixupPlan, fixupPrd, replannedPrd } from './subtask-texts.js';

export interface OrchestratorOptions {
  taskId: string;
  prd: string;
  subtasks: PlannedSubtask[];
  max: number;
  /** Attempts of one subtask after the first (re-plans after ng, conflict or an irreparable merge). */
  maxReplans: number;
  /** Fix-up tasks per merge whose combined DoD is red. */
  maxFixups: number;
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

const PASSING_DOD = new Set(['passed', 'none', 'skipped']);

export class ProjectOrchestrator {
  private readonly records = new Map<string, SubtaskRecord>();
  private readonly merges: MergeLogEntry[] = [];
  private combinedDod: DodOutcome | null = null;
  private mergeQueue: Promise<void> = Promise.resolve();
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
    await this.mergeQueue;
    return this.outcome();
  }

  private async runSubtask(id: string, signal?: AbortSignal): Promise<void> {
    const record = this.record(id);
    record.startedAt ??= this.deps.clock.now();
    const base = await this.deps.integration.head();
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
        onEvent: (event) => this.deps.emit(event),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      this.finishRecord(record, 'failed', `could not run: ${(error as Error).message}`);
      return;
    }
    const summary = result.summary;
    record.attempts.push(summary);
    this.deps.emit({ type: 'subtask_finished', subtask: id, taskId: record.taskId, summary });
    if (summary.state !== 'COMPLETE') {
      const state = signal?.aborted ? 'waiting' : 'failed';
      this.finishRecord(
        record,
        state === 'waiting' ? 'failed' : state,
        `${summary.state}: ${summary.reason}`,
      );
      return;
    }
    // The review is a Meta-agent call too: none once the project's budget is spent.
    if (!signal?.aborted) this.stopReason ??= this.budgetSpent();
    if (signal?.aborted || this.stopReason) {
      this.finishRecord(record, 'failed', `not merged: ${this.stopReason ?? 'interrupted'}`);
      return;
    }

    this.setState(id, 'reviewing', 'gate passed');
    const evidence: FactsForAssessment = {
      summary: `Subtask ${id} ended ${summary.state} after ${summary.runs} worker run(s): ${summary.reason}. Its branch ${summary.branch} is at ${summary.headSha ?? 'unknown'}.`,
      dodResults: result.dod?.results ?? [],
      diff: await this.deps.integration.diff(base, summary.branch),
      ...(result.workerSummary ? { workerSummary: result.workerSummary } : {}),
    };
    let review: ReviewVerdict;
    try {
      const reviewed = await this.deps.meta.review({
        taskId: record.taskId,
        subtask: record.subtask,
        evidence,
        ...(signal ? { signal } : {}),
      });
      this.deps.ledger.countMeta(reviewed.usage);
      review = reviewed.review;
      record.reviews.push(review);
      this.deps.emit({ type: 'review', subtask: id, taskId: record.taskId, review, usage: reviewed.usage });
    } catch (error) {
      this.finishRecord(record, 'failed', `the review failed: ${(error as Error).message}`);
      return;
    }
    if (review.verdict === 'ng') {
      await this.replan(record, review.findings, `the review said ng: ${review.summary}`, signal);
      return;
    }
    this.setState(id, 'merging', 'review ok; in the merge queue');
    const merged = (this.mergeQueue = this.mergeQueue.then(() => this.merge(record, signal)));
    await merged;
  }

  /** One merge at a time: merge, combined DoD, fix-up when red, take the merge back when that fails. */
  private async merge(record: SubtaskRecord, signal?: AbortSignal): Promise<void> {
    const id = record.subtask.id;
    const integration = this.deps.integration;
    const before = await integration.head();
    const branch = `agent-runner/${record.taskId}`;
    const result = await integration.merge(
      branch,
      `agent-runner: merge subtask ${id} (${record.subtask.title})`,
    );
    if (result.status === 'conflict') {
      this.logMerge({ subtask: id, branch, status: 'conflict', sha: result.sha, files: result.files });
      await this.replan(
        record,
        [],
        `merging ${branch} into ${integration.branch} conflicted in ${result.files.join(', ') || 'some files'}; start again from the integration branch as it is now`,
        signal,
      );
      return;
    }
    this.logMerge({ subtask: id, branch, status: 'merged', sha: result.sha });
    let dod = await this.checkCombined(id, signal);
    for (let fixup = 1; !PASSING_DOD.has(dod.status) && fixup <= this.options.maxFixups; fixup += 1) {
      if (signal?.aborted || this.stopReason) break;
      const repaired = await this.fixup(record, dod, signal);
      if (!repaired) break;
      dod = await this.checkCombined(`${id} + fix-up`, signal);
    }
    if (PASSING_DOD.has(dod.status)) {
      this.finishRecord(record, 'merged', `merged at ${result.sha.slice(0, 12)}; combined DoD ${dod.status}`);
      return;
    }
    await integration.resetTo(before);
    this.logMerge({ subtask: id, branch, status: 'reverted', sha: before });
    await this.replan(
      record,
      [],
      `after merging it the Definition of Done failed on the combined tree and the fix-up could not repair it:\n${dodReport(dod)}`,
      signal,
    );
  }

  private async checkCombined(label: string, signal?: AbortSignal): Promise<DodOutcome> {
    const dod = await this.deps.integration.combinedDod(label, signal);
    this.combinedDod = dod;
    const headSha = await this.deps.integration.head();
    this.deps.emit({ type: 'combined_dod', subtask: label, headSha, dod });
    const last = this.merges.at(-1);
    if (last) last.dod = dod;
    return dod;
  }

  /** A fix-up task from the integration branch's head; merged (fast-forward) when its own gate passed. */
  private async fixup(record: SubtaskRecord, dod: DodOutcome, signal?: AbortSignal): Promise<boolean> {
    this.fixups += 1;
    const taskId = `${this.options.taskId}--fixup-${this.fixups}`;
    const id = record.subtask.id;
    const reason = `the combined DoD failed after merging ${id}`;
    this.deps.emit({ type: 'fixup', subtask: id, taskId, state: 'running', reason });
    const scope = [...new Set(this.options.subtasks.flatMap((subtask) => subtask.writeScope))];
    const prd = fixupPrd(id, dod, this.options.prd);
    let result: SubtaskResult;
    try {
      result = await this.deps.runner.run({
        taskId,
        subtask: `fixup-${this.fixups}`,
        prd,
        plan: fixupPlan(id),
        base: await this.deps.integration.head(),
        writeScope: scope,
        readScope: [],
        limits: this.deps.ledger.remaining(),
        parent: this.deps.ledger,
        onEvent: (event) => this.deps.emit(event),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      this.deps.emit({
        type: 'fixup',
        subtask: id,
        taskId,
        state: 'FAILED',
        reason: (error as Error).message,
      });
      return false;
    }
    this.deps.emit({
      type: 'fixup',
      subtask: id,
      taskId,
      state: result.summary.state,
      reason: result.summary.reason,
    });
    if (result.summary.state !== 'COMPLETE') return false;
    const branch = `agent-runner/${taskId}`;
    const merged = await this.deps.integration.merge(branch, `agent-runner: fix-up after merging ${id}`);
    this.logMerge({
      subtask: `fixup-${this.fixups}`,
      branch,
      status: merged.status,
      sha: merged.sha,
      ...(merged.status === 'conflict' ? { files: merged.files } : {}),
    });
    return merged.status === 'merged';
  }

  /** Plans the subtask again (new criteria from the Meta-agent) and puts it back in the queue, or fails it. */
  private async replan(
    record: SubtaskRecord,
    findings: ReviewFinding[],
    reason: string,
    signal?: AbortSignal,
  ): Promise<void> {
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
      combinedDod: this.combinedDod,
      headSha: await this.deps.integration.head(),
      usage: this.deps.ledger.usage(),
      metaCalls: this.deps.ledger.metaCalls,
      stopReason: this.stopReason,
    });
  }
}
