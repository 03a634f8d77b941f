/**
 * The task-level ports of a loop with a no-op worker, each doing its real Docker work through a
 * SandboxRuntime: the worker runs `true` once per run, observe, runDod and each read of the checkout run one
 * exec each, the sandbox is a real create/remove. What they report back is synthetic but sized like a real
 * run's (a failing test tail, a diff, a worker summary), so the Meta-agent's prompts carry realistic history.
 */
import type {
  MissingProgram,
  PreparedTask,
  SandboxProviderPort,
  SandboxRuntime,
  SandboxSpec,
  TaskWorkspacePort,
  WorkerAdapter,
  WorkerRunRequest,
  WorkerRunResult,
  WorkspacePreparation,
} from '../src/core/ports.js';
import type { CriterionCheckResult, DodOutcome, TaskFacts } from '../src/core/types.js';
import { finishedExec } from '../tests/support/core-fakes.js';

/** A test failure as a real worker would have seen it: ~1.4 KB. */
const FAILING_TEST_TAIL = Array.from(
  { length: 24 },
  (_, line) => `  FAIL tests/slugify.test.ts > slugify > case ${line + 1}: expected 'a-b' to be 'a-b-c'`,
).join('\n');

/** A diff of a few hundred lines' worth of characters: ~3 KB. */
const DIFF = Array.from(
  { length: 60 },
  (_, line) => `+export const value${line} = slugify('Hello World ${line}'); // added`,
).join('\n');

function execFailure(what: string, exitCode: number): Error {
  return new Error(`bench: ${what} exited ${exitCode} (expected 0)`);
}

/** The worker: one exec of `true` per run. */
export class NoopWorker implements WorkerAdapter {
  readonly type = 'noop';
  runs = 0;

  constructor(private readonly runtime: SandboxRuntime) {}

  async run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    this.runs += 1;
    const result = await this.runtime.exec(request.sandboxId, ['true'], {
      timeoutMs: request.timeoutMs,
      graceMs: request.graceMs,
      signal: request.signal,
    });
    if (result.exitCode !== 0) throw execFailure('the no-op worker', result.exitCode);
    return {
      ...finishedExec({ durationMs: result.durationMs }),
      threadId: `thread-${this.runs}`,
      commands: [
        { command: 'npm test', exitCode: 1, status: 'completed', outputTail: FAILING_TEST_TAIL },
        { command: 'git commit -am "wip"', exitCode: 0, status: 'completed', outputTail: '' },
      ],
      fileChanges: [{ path: 'src/slugify.ts', kind: 'update' }],
      agentMessages: ['Changed slugify.'],
      finalMessage: `Run ${this.runs}: changed slugify to collapse separators; one test case still fails.`,
      usage: { inputTokens: 12_000, cachedInputTokens: 8_000, outputTokens: 900, reasoningTokens: 300 },
      errors: [],
      unparsedLines: 0,
      failed: false,
    };
  }
}

/** The workspace: one exec each for observe and runDod; the task branch gains a commit per run. */
export class ExecWorkspace implements TaskWorkspacePort {
  private commits: { sha: string; subject: string }[] = [];

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly task: PreparedTask,
    /** The DoD passes from this run on (so the last iteration can complete). */
    private readonly passFromRun: number,
  ) {}

  prepare(): WorkspacePreparation {
    return { mountable: Promise.resolve(), prepared: Promise.resolve(this.task) };
  }

  async observe(sandboxId: string): Promise<TaskFacts> {
    const result = await this.runtime.exec(sandboxId, ['true'], { workdir: '/workspace', timeoutMs: 30_000 });
    if (result.exitCode !== 0) throw execFailure('observe', result.exitCode);
    const index = this.commits.length + 1;
    this.commits.push({ sha: index.toString(16).padStart(40, 'a'), subject: `Run ${index}: slugify` });
    const headSha = this.commits.at(-1)?.sha ?? this.task.baseSha;
    return {
      baseSha: this.task.baseSha,
      headSha,
      taskBranch: { name: this.task.branch, headSha },
      commits: [...this.commits],
      dirty: false,
      uncommitted: [],
      changedFiles: ['src/slugify.ts', 'tests/slugify.test.ts'],
      diffStat: ' 2 files changed, 60 insertions(+)',
      diff: DIFF,
      scopeViolations: [],
    };
  }

  async runCriteriaChecks(): Promise<CriterionCheckResult[]> {
    return [];
  }

  /** One exec, as the real read of the sandbox's HEAD; the checkout is the latest commit. */
  async checkedOutHead(sandboxId: string): Promise<string | null> {
    const result = await this.runtime.exec(sandboxId, ['true'], { workdir: '/workspace', timeoutMs: 30_000 });
    if (result.exitCode !== 0) throw execFailure('checkedOutHead', result.exitCode);
    return this.commits.at(-1)?.sha ?? this.task.baseSha;
  }

  async sealCheckCaches(): Promise<number | null> {
    return null;
  }

  async missingPrograms(): Promise<MissingProgram[]> {
    return [];
  }

  async runDod(sandboxId: string): Promise<DodOutcome> {
    const result = await this.runtime.exec(sandboxId, ['true'], { workdir: '/workspace', timeoutMs: 30_000 });
    if (result.exitCode !== 0) throw execFailure('runDod', result.exitCode);
    const passed = this.commits.length >= this.passFromRun;
    return {
      status: passed ? 'passed' : 'failed',
      ranOnDirtyTree: false,
      source: 'config',
      results: [
        {
          name: 'test',
          command: 'npm test',
          status: passed ? 'passed' : 'failed',
          exitCode: passed ? 0 : 1,
          durationMs: result.durationMs,
          outputTail: passed ? 'all tests passed' : FAILING_TEST_TAIL,
        },
      ],
    };
  }

  async preserveUncommitted(): Promise<string | null> {
    return null;
  }
}

/** The sandbox provider: a real create (the spec agent-runner uses) and a real remove. */
export class RuntimeSandboxes implements SandboxProviderPort {
  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly spec: SandboxSpec,
  ) {}

  async create(): Promise<string> {
    return (await this.runtime.create(this.spec)).id;
  }

  async setUp(): Promise<void> {}

  async stop(sandboxId: string): Promise<void> {
    await this.runtime.remove(sandboxId);
  }
}
