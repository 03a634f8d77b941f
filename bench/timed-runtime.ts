/**
 * A SandboxRuntime decorator that measures the time spent inside Docker calls, so a loop's wall time can be
 * split into "Docker" and "agent-runner". With calls in flight at once (parallel tasks), the time counted is
 * the union of their intervals: a moment is "inside Docker" when at least one call is running.
 */
import type {
  ExecOptions,
  ExecResult,
  SandboxInfo,
  SandboxRuntime,
  SandboxSpec,
  SandboxSummary,
} from '../src/core/ports.js';
import { finishedExec } from '../tests/support/core-fakes.js';

export class TimedRuntime implements SandboxRuntime {
  /** Wall time during which at least one call was in flight. */
  insideMs = 0;
  /** Calls per method. */
  readonly calls: Record<string, number> = {};
  private active = 0;
  private since = 0;

  constructor(private readonly inner: SandboxRuntime) {}

  private async measure<T>(method: string, call: () => Promise<T>): Promise<T> {
    this.calls[method] = (this.calls[method] ?? 0) + 1;
    if (this.active === 0) this.since = performance.now();
    this.active += 1;
    try {
      return await call();
    } finally {
      this.active -= 1;
      if (this.active === 0) this.insideMs += performance.now() - this.since;
    }
  }

  ping(): Promise<{ version: string }> {
    return this.measure('ping', () => this.inner.ping());
  }
  create(spec: SandboxSpec): Promise<SandboxInfo> {
    return this.measure('create', () => this.inner.create(spec));
  }
  exec(sandboxId: string, argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
    return this.measure('exec', () => this.inner.exec(sandboxId, argv, options));
  }
  remove(sandboxId: string): Promise<void> {
    return this.measure('remove', () => this.inner.remove(sandboxId));
  }
  list(labels: Record<string, string>): Promise<SandboxSummary[]> {
    return this.measure('list', () => this.inner.list(labels));
  }
}

/**
 * A runtime with no Docker behind it: every exec succeeds at once. The loop over it costs only
 * agent-runner's own work, a cross-check of "wall time minus Docker time".
 */
export class InstantRuntime implements SandboxRuntime {
  private next = 0;
  async ping(): Promise<{ version: string }> {
    return { version: 'instant' };
  }
  async create(spec: SandboxSpec): Promise<SandboxInfo> {
    this.next += 1;
    return { id: `instant-${this.next}`, name: `instant-${spec.taskId}` };
  }
  async exec(): Promise<ExecResult> {
    return finishedExec({ durationMs: 0 });
  }
  async remove(): Promise<void> {}
  async list(): Promise<SandboxSummary[]> {
    return [];
  }
}
