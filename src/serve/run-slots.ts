/**
 * How many tasks a server runs at once: at most `max`, the others wait in the order they were started; a
 * waiting task that is stopped leaves the queue at once (it ends without starting).
 */
export class RunSlots {
  private runningNow = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly max: number = Number.POSITIVE_INFINITY) {}

  /** Waits for a free slot, or until `stopped` (then it takes one anyway: the task ends at once and releases it). */
  async take(stopped: AbortSignal): Promise<void> {
    while (this.runningNow >= this.max && !stopped.aborted)
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.runningNow += 1;
  }

  release(): void {
    this.runningNow -= 1;
    this.waiting.shift()?.();
  }

  /** Wakes every waiting task (one was stopped: it leaves the queue, the others wait again). */
  wakeAll(): void {
    for (const wake of this.waiting.splice(0)) wake();
  }
}
