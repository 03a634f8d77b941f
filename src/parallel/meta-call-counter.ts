/**
 * The project's Meta-agent calls, counted as they are made: its own (plan, reviews, re-plans) and every
 * subtask's, including subtasks running at the same time. Subtasks stop at their next step once the
 * project's `limits.maxMetaCalls` is reached, so together they cannot go past it by more than the calls
 * already in flight.
 */
import { limitMessage } from '../core/limits.js';
import type { SharedMetaCalls } from '../core/ports.js';

export class MetaCallCounter implements SharedMetaCalls {
  constructor(
    private readonly max: number,
    /** Calls spent before (earlier attempts of a resumed project). */
    private count = 0,
  ) {}

  get used(): number {
    return this.count;
  }

  add(): void {
    this.count += 1;
  }

  exhausted(): string | null {
    return this.count >= this.max
      ? limitMessage({ code: 'project_meta_calls', limit: this.max, used: this.count })
      : null;
  }
}
