/**
 * The merge train of a project: subtasks whose review said ok wait in one queue; whenever the train is free it
 * takes every one waiting as one candidate, merges them onto the integration branch one after another and runs
 * one combined check (the DoD and every merged subtask's criteria) on the result. Green: all of them are
 * merged. Red with one subtask: it gets its fix-up (the orchestrator's), and is taken back when that does not
 * repair it. Red with several: the batch is taken back and bisected, as merge queues in the field do. The
 * first half merges and is checked on its own (recursively); when it passed, the second half is known to hold
 * the culprit (the whole was red) and is split again without a check of its own. So a batch of three with one
 * culprit merges the two good ones and leaves the culprit alone with its red check. A train that was idle
 * waits, at most `gatherMs`, while other subtasks are still in their review, so subtasks reviewed at about the
 * same moment ride together (a combined check costs a sandbox and the DoD; the wait is a fraction of one); with
 * no review under way it leaves at once. Imports ports only.
 */
import type { IntegrationPort } from './ports.js';
import type { CombinedCheck } from './project-events.js';
import type { MergeLogEntry, SubtaskRecord } from './project-outcome.js';
import { combinedPassed } from './combined-check.js';

/** What the train needs from the orchestrator: the checks, the records and what becomes of a subtask. */
export interface MergeTrainHost {
  integration: IntegrationPort;
  /** Runs and records the combined check of the integration head, `cars` included with the merged ones. */
  check(label: string, cars: readonly SubtaskRecord[], signal?: AbortSignal): Promise<CombinedCheck>;
  /** Fix-ups for one subtask whose merge left the tree red: the last check, passed or not. */
  repair(car: SubtaskRecord, red: CombinedCheck, signal?: AbortSignal): Promise<CombinedCheck>;
  logMerge(entry: MergeLogEntry): void;
  /** The cars are merged: the check passed on the head that has them. */
  merged(cars: readonly SubtaskRecord[], check: CombinedCheck): void;
  /** The integration branch was moved back to `sha`: what is recorded now is that head's state. */
  reverted(sha: string): void;
  /** A merge that conflicted (aborted, nothing changed): plan the subtask again. */
  conflicted(car: SubtaskRecord, files: string[], signal?: AbortSignal): Promise<void>;
  /** A subtask that stays red on the combined tree alone (after its fix-ups): plan it again. */
  rejected(car: SubtaskRecord, red: CombinedCheck, signal?: AbortSignal): Promise<void>;
  /**
   * How many subtasks are about to be ready: in their review, or with their checks passed and their review
   * asked beside the assessment (they may join the train that is about to leave).
   */
  inReview(): number;
}

/** How often a gathering train looks whether the reviews under way have answered. */
const GATHER_POLL_MS = 20;

interface Waiting {
  car: SubtaskRecord;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class MergeTrain {
  private readonly waiting: Waiting[] = [];
  private running: Promise<void> | null = null;

  constructor(
    private readonly host: MergeTrainHost,
    private readonly gatherMs = 0,
  ) {}

  /** Queues a reviewed subtask; resolves once its batch is settled (merged, re-planned or failed). */
  enqueue(car: SubtaskRecord, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ car, resolve, reject });
      this.running ??= this.drive(signal).finally(() => (this.running = null));
    });
  }

  private async drive(signal?: AbortSignal): Promise<void> {
    const until = Date.now() + this.gatherMs;
    while (this.host.inReview() > 0 && Date.now() < until && !signal?.aborted)
      await new Promise((resolve) => setTimeout(resolve, GATHER_POLL_MS));
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0);
      try {
        await this.mergeBatch(
          batch.map((entry) => entry.car),
          signal,
        );
        for (const entry of batch) entry.resolve();
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
  }

  /**
   * Merges the cars onto the head and settles each. `knownRed`: this batch on this head is known to fail
   * (it held the culprit of a red batch whose other half passed), so it is split without a check of its own.
   * True when every car ended merged.
   */
  private async mergeBatch(
    cars: readonly SubtaskRecord[],
    signal: AbortSignal | undefined,
    knownRed = false,
  ): Promise<boolean> {
    const { integration } = this.host;
    if (knownRed && cars.length > 1) {
      await this.bisect(cars, signal);
      return false;
    }
    const before = await integration.head();
    const merged: SubtaskRecord[] = [];
    for (const car of cars) {
      const branch = `agent-runner/${car.taskId}`;
      const result = await integration.merge(
        branch,
        `agent-runner: merge subtask ${car.subtask.id} (${car.subtask.title})`,
      );
      if (result.status === 'conflict') {
        this.host.logMerge({
          subtask: car.subtask.id,
          branch,
          status: 'conflict',
          sha: result.sha,
          files: result.files,
        });
        await this.host.conflicted(car, result.files, signal);
        continue;
      }
      this.host.logMerge({ subtask: car.subtask.id, branch, status: 'merged', sha: result.sha });
      merged.push(car);
    }
    if (merged.length === 0) return false;
    const label = merged.map((car) => car.subtask.id).join(', ');
    let check = await this.host.check(label, merged, signal);
    if (!combinedPassed(check) && merged.length === 1)
      check = await this.host.repair(merged[0]!, check, signal);
    if (combinedPassed(check)) {
      this.host.merged(merged, check);
      return merged.length === cars.length;
    }
    await integration.resetTo(before);
    this.host.logMerge({ subtask: label, branch: integration.branch, status: 'reverted', sha: before });
    this.host.reverted(before);
    if (merged.length === 1 || signal?.aborted) {
      for (const car of merged) await this.host.rejected(car, check, signal);
      return false;
    }
    await this.bisect(merged, signal);
    return false;
  }

  /** Splits a red batch (taken back) in two: the first half is checked; the second is known red if it passed. */
  private async bisect(cars: readonly SubtaskRecord[], signal?: AbortSignal): Promise<void> {
    const half = Math.floor(cars.length / 2);
    const firstPassed = await this.mergeBatch(cars.slice(0, half), signal);
    await this.mergeBatch(cars.slice(half), signal, firstPassed);
  }
}
