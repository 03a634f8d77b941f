/**
 * Honest fakes of the core's task-level ports: each implements the same port, keeps real state, records
 * calls and refuses calls past its script. Used by the loop's unit tests and the benchmarks.
 */
import type { FollowupContext } from '../../src/core/followup.js';
import type {
  Clock,
  ExecResult,
  ProcessEnd,
  MissingProgram,
  HumanPort,
  MetaAgentPort,
  MetaView,
  NoteStorePort,
  PreparedTask,
  SandboxProviderPort,
  TaskWorkspacePort,
  WorkerAdapter,
  WorkerRunRequest,
  WorkerRunResult,
  WorkspacePreparation,
} from '../../src/core/ports.js';
import type {
  AcceptanceCriterion,
  Assessment,
  CriterionCheckResult,
  DodOutcome,
  MetaDecision,
  Plan,
  TaskFacts,
  Usage,
} from '../../src/core/types.js';
import { ZERO_USAGE } from '../../src/core/usage.js';
import type { StampedEvent } from '../../src/core/events.js';
import type { TaskRecord, TaskRunnerDeps, TaskRunnerOptions } from '../../src/core/task-runner.js';
import { loadPatternLibrary } from '../../src/patterns/pattern-library.js';
import { workerPromptTemplate } from '../../src/patterns/worker-prompt.js';

export const usage = (tokens = 100): Usage => ({
  ...ZERO_USAGE,
  inputTokens: tokens,
  outputTokens: tokens / 10,
});

export type MetaStep =
  | { kind: 'plan'; plan: Plan }
  | { kind: 'decide'; decision: MetaDecision }
  | { kind: 'assess'; assessment: Assessment }
  | { kind: 'error'; on: 'plan' | 'decide' | 'assess'; error: Error }
  /** The call never answers: it ends only when its signal aborts (with the signal's reason). */
  | { kind: 'hang'; on: 'plan' | 'decide' | 'assess' };

/** The plan the loop's tests share: one critical criterion. */
export const SLUGIFY_PLAN: Plan = {
  title: 'Add slugify',
  acceptanceCriteria: [{ id: 'AC1', description: 'slugify works', type: 'functional', critical: true }],
};

/** A `run_worker` decision with the given prompt, patterns and mode. */
export function runWorkerStep(
  options: { prompt?: string; patterns?: string[]; mode?: 'exec' | 'resume'; reason?: string } = {},
): MetaStep {
  return {
    kind: 'decide',
    decision: {
      action: 'run_worker',
      reason: options.reason ?? 'start',
      usedPatterns: options.patterns ?? [],
      workerCall: {
        workerType: 'codex',
        mode: options.mode ?? 'exec',
        prompt: options.prompt ?? 'Implement slugify',
      },
    },
  };
}

/** An assessment of AC1 (satisfied or not). */
export function assessStep(satisfied: boolean, retrospective: string[] = []): MetaStep {
  return {
    kind: 'assess',
    assessment: {
      allCriteriaSatisfied: satisfied,
      summary: satisfied ? 'slugify done' : 'test fails',
      byCriterion: [{ id: 'AC1', status: satisfied ? 'passed' : 'failed', comment: '' }],
      retrospective,
    },
  };
}

/** A worker run that commits slugify, with the tests then passing or failing. */
export function commitSlugify(passing: boolean, subject = 'Add slugify'): WorkerEffect {
  return (repo) => {
    repo.commits.push({ sha: `c${repo.commits.length + 1}`, subject });
    repo.testsPass = passing;
  };
}

/** Consumes one scripted step per call; a call of the wrong kind or past the end throws. */
export class ScriptedMetaAgent implements MetaAgentPort {
  readonly calls: { kind: string; view?: MetaView; followup?: FollowupContext }[] = [];
  private position = 0;

  constructor(private readonly script: MetaStep[]) {}

  /** Resolves with the step, or waits on `signal` for a hanging step. */
  private async answer(kind: 'plan' | 'decide' | 'assess', signal?: AbortSignal): Promise<MetaStep> {
    const step = this.script[this.position];
    if (step?.kind === 'hang' && step.on === kind) {
      this.position += 1;
      return new Promise((_resolve, reject) => {
        if (!signal) return reject(new Error('ScriptedMetaAgent: a hanging call without a signal'));
        if (signal.aborted) return reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    return this.next(kind);
  }

  private next(kind: 'plan' | 'decide' | 'assess'): MetaStep {
    const step = this.script[this.position];
    if (!step)
      throw new Error(
        `ScriptedMetaAgent: unexpected ${kind} call #${this.position + 1} past the end of the script`,
      );
    this.position += 1;
    if (step.kind === 'error' && step.on === kind) throw step.error;
    if (step.kind !== kind) throw new Error(`ScriptedMetaAgent: expected a ${step.kind} call, got ${kind}`);
    return step;
  }

  async plan(input: {
    signal?: AbortSignal;
    followup?: FollowupContext;
  }): Promise<{ plan: Plan; usage: Usage }> {
    this.calls.push({
      kind: 'plan',
      ...(input.followup ? { followup: structuredClone(input.followup) } : {}),
    });
    const step = await this.answer('plan', input.signal);
    return { plan: (step as { plan: Plan }).plan, usage: usage() };
  }

  async nextAction(view: MetaView, signal?: AbortSignal): Promise<{ decision: MetaDecision; usage: Usage }> {
    this.calls.push({ kind: 'decide', view: structuredClone(view) });
    const step = await this.answer('decide', signal);
    return { decision: (step as { decision: MetaDecision }).decision, usage: usage() };
  }

  async assess(
    view: MetaView,
    _evidence: unknown,
    signal?: AbortSignal,
  ): Promise<{ assessment: Assessment; usage: Usage }> {
    this.calls.push({ kind: 'assess', view: structuredClone(view) });
    const step = await this.answer('assess', signal);
    return { assessment: (step as { assessment: Assessment }).assessment, usage: usage() };
  }

  assertComplete(): void {
    if (this.position !== this.script.length) {
      throw new Error(
        `ScriptedMetaAgent: ${this.script.length - this.position} scripted step(s) were not used`,
      );
    }
  }
}

/** A repository in memory: the fake worker changes it, the fake workspace observes it. */
export interface FakeRepo {
  commits: { sha: string; subject: string }[];
  uncommitted: string[];
  violations: string[];
  testsPass: boolean;
  preserved: string[];
  /** Files on the task branch (for file_exists checks). */
  files: string[];
  /** False: no DoD check is configured or detected (status `none`). */
  hasDod: boolean;
  /** Exit codes of `command` checks by command; a command not listed passes when `testsPass`. */
  commandExits: Record<string, number>;
  /** How many times the DoD and the criteria checks ran. */
  dodRuns: number;
  checkRuns: number;
  /**
   * Set when the worker's head could not be put on the task branch: the branch stays at `branchHead`, the
   * head is kept at `ref`, for `reason`.
   */
  pending: { branchHead: string; ref: string; reason: string } | null;
  /** The DoD moves the sandbox's checkout to this commit (the read after the checks sees it). */
  dodChecksOut: string | null;
  /** The failing tests a failing DoD check names (absent: it names none). */
  failingTests?: string[];
  /** Programs the sandbox does not have (preflight). */
  missingPrograms?: string[];
}

export function fakeRepo(): FakeRepo {
  return {
    commits: [],
    uncommitted: [],
    violations: [],
    testsPass: false,
    preserved: [],
    files: [],
    hasDod: true,
    commandExits: {},
    dodRuns: 0,
    checkRuns: 0,
    pending: null,
    dodChecksOut: null,
  };
}

export class FakeWorkspace implements TaskWorkspacePort {
  prepared = 0;
  /** The sandbox's checkout when a check moved it off the worker's head (null: on the head). */
  private checkout: { head: string; checkedOut: string } | null = null;
  constructor(private readonly repo: FakeRepo) {}

  private get head(): string {
    return this.repo.commits.at(-1)?.sha ?? 'base000000';
  }

  prepare(): WorkspacePreparation {
    // Mountable when prepared: tests that need the two apart override this.
    const prepared = this.prepareTask();
    return { mountable: prepared.then(() => undefined), prepared };
  }

  async prepareTask(): Promise<PreparedTask> {
    this.prepared += 1;
    return {
      branch: 'agent-runner/T-1',
      baseSha: 'base000000',
      worktreePath: '/tmp/worktree',
      dirtyStart: false,
      scopeStatement: 'You may write anything except excluded files.',
    };
  }

  async observe(): Promise<TaskFacts> {
    const { repo, head } = this;
    return {
      baseSha: 'base000000',
      headSha: head,
      taskBranch: { name: 'agent-runner/T-1', headSha: repo.pending?.branchHead ?? head },
      ...(repo.pending ? { pendingRef: repo.pending.ref, pendingReason: repo.pending.reason } : {}),
      commits: [...repo.commits],
      dirty: repo.uncommitted.length > 0,
      uncommitted: [...repo.uncommitted],
      changedFiles: [],
      diffStat: `${repo.commits.length} commit(s)`,
      diff: '',
      scopeViolations: [...repo.violations],
    };
  }

  async runDod(_sandboxId: string, facts: Pick<TaskFacts, 'dirty'>): Promise<DodOutcome> {
    this.repo.dodRuns += 1;
    if (this.repo.dodChecksOut !== null)
      this.checkout = { head: this.head, checkedOut: this.repo.dodChecksOut };
    if (!this.repo.hasDod)
      return { status: 'none', results: [], ranOnDirtyTree: facts.dirty, source: 'detected: nothing' };
    const status = this.repo.testsPass ? 'passed' : 'failed';
    return {
      status,
      ranOnDirtyTree: facts.dirty,
      source: 'config',
      results: [
        {
          name: 'test',
          command: 'npm test',
          status,
          exitCode: status === 'passed' ? 0 : 1,
          durationMs: 3,
          outputTail: status,
          ...(status === 'failed' && this.repo.failingTests
            ? { failingTests: [...this.repo.failingTests] }
            : {}),
        },
      ],
    };
  }

  /** How many times the checks' caches were sealed. */
  seals = 0;

  async sealCheckCaches(): Promise<number | null> {
    this.seals += 1;
    return 0;
  }

  async missingPrograms(
    _sandboxId: string,
    commands?: readonly { label: string; command: string }[],
  ): Promise<MissingProgram[]> {
    const checks = commands ?? (this.repo.hasDod ? [{ label: 'DoD check test', command: 'npm test' }] : []);
    return checks.flatMap((item) => {
      const program = item.command.split(' ')[0] ?? '';
      return this.repo.missingPrograms?.includes(program) ? [{ ...item, program }] : [];
    });
  }

  async runCriteriaChecks(
    _sandboxId: string,
    criteria: readonly AcceptanceCriterion[],
    facts: TaskFacts,
  ): Promise<CriterionCheckResult[]> {
    this.repo.checkRuns += 1;
    return criteria.flatMap((criterion): CriterionCheckResult[] => {
      const check = criterion.check;
      if (!check) return [];
      const base = {
        criterionId: criterion.id,
        critical: criterion.critical,
        kind: check.kind,
        durationMs: 1,
        outputTail: '',
        ranOnDirtyTree: facts.dirty,
      };
      if (check.kind === 'command' && check.command) {
        const exit = this.repo.commandExits[check.command] ?? (this.repo.testsPass ? 0 : 1);
        return [
          {
            ...base,
            target: check.command,
            status: exit === 0 ? 'passed' : 'failed',
            exitCode: exit,
            outputTail: `exit ${exit}`,
            reason: exit === 0 ? '' : `exit ${exit}`,
          },
        ];
      }
      if (check.kind === 'file_exists' && check.file) {
        const exists = this.repo.files.includes(check.file);
        return [
          { ...base, target: check.file, status: exists ? 'passed' : 'failed', exitCode: null, reason: '' },
        ];
      }
      return [
        { ...base, target: check.kind, status: 'not_executed', exitCode: null, reason: 'not executed' },
      ];
    });
  }

  async checkedOutHead(): Promise<string | null> {
    // A new commit of the worker is checked out again; a checkout a check moved stays until then.
    if (this.checkout?.head === this.head) return this.checkout.checkedOut;
    this.checkout = null;
    return this.head;
  }

  async preserveUncommitted(): Promise<string | null> {
    if (this.repo.uncommitted.length === 0) return null;
    this.repo.preserved.push(...this.repo.uncommitted);
    return 'refs/agent-runner/wip/T-1';
  }
}

export class FakeSandboxes implements SandboxProviderPort {
  readonly live = new Set<string>();
  /** Containers created. */
  started = 0;
  /** Sandboxes set up (their ids). */
  readonly setUpIds: string[] = [];
  async create(): Promise<string> {
    this.started += 1;
    const id = `sandbox-${this.started}`;
    this.live.add(id);
    return id;
  }
  async setUp(id: string): Promise<void> {
    this.setUpIds.push(id);
  }
  async stop(id: string): Promise<void> {
    this.live.delete(id);
  }
}

export type WorkerEffect = (repo: FakeRepo, request: WorkerRunRequest) => Partial<WorkerRunResult> | void;

/** Applies one scripted effect to the fake repository per run. */
export class FakeWorker implements WorkerAdapter {
  readonly type = 'fake';
  readonly requests: WorkerRunRequest[] = [];
  constructor(
    private readonly repo: FakeRepo,
    private readonly effects: WorkerEffect[],
  ) {}

  async run(request: WorkerRunRequest): Promise<WorkerRunResult> {
    this.requests.push(request);
    const effect = this.effects[this.requests.length - 1];
    if (!effect) throw new Error(`FakeWorker: no scripted effect for run ${this.requests.length}`);
    const override = effect(this.repo, request) ?? {};
    return {
      ...processEnded({ durationMs: 10 }),
      threadId: 'thread-1',
      commands: [{ command: 'npm test', exitCode: 0, status: 'completed', outputTail: '' }],
      fileChanges: [],
      agentMessages: ['done'],
      finalMessage: 'done',
      usage: { inputTokens: 50, cachedInputTokens: 0, outputTokens: 5, reasoningTokens: 0 },
      errors: [],
      unparsedLines: 0,
      failed: false,
      ...override,
    };
  }
}

export class FakeHuman implements HumanPort {
  readonly questions: string[] = [];
  constructor(private readonly answers: (string | null)[]) {}
  async ask(question: string): Promise<string | null> {
    this.questions.push(question);
    return this.answers.shift() ?? null;
  }
}

export class NoMemory implements NoteStorePort {
  async readMemory(): Promise<{ title: string; summary: string; path: string }[]> {
    return [];
  }
}

/** Time moves only when the test (or a sleep) moves it. */
export class ManualClock implements Clock {
  constructor(public time = Date.parse('2026-01-01T00:00:00Z')) {}
  now(): number {
    return this.time;
  }
  async sleep(ms: number): Promise<void> {
    this.time += ms;
  }
}

/** The options of a test task `T-1` (the package's patterns, a fake worker type, priced model `m`), with overrides. */
export async function testRunnerOptions(
  overrides: Partial<TaskRunnerOptions> = {},
): Promise<TaskRunnerOptions> {
  return {
    taskId: 'T-1',
    prd: '# Slugify',
    limits: { maxIterations: 5, maxMetaCalls: 30, wallClock: 3_600_000, maxStalls: 3 },
    worker: { type: 'fake', model: 'm', timeoutMs: 60_000, graceMs: 1000 },
    prices: { m: { input: 1, output: 10 } },
    dodSkipped: false,
    headless: true,
    patterns: await loadPatternLibrary(),
    runDir: '/tmp/runs/T-1',
    startOptions: { prdPath: '/repo/PRD.md', prd: '# Slugify', dodSkipped: false },
    ...overrides,
  };
}

/**
 * A test task's ports: the fakes over `repo` (no answers from the person, no memory, a manual clock), every
 * note written pushed to `notes` and every event to `events`; `parts` replaces any of them.
 */
export function testRunnerDeps(
  repo: FakeRepo,
  parts: Partial<TaskRunnerDeps> & Pick<TaskRunnerDeps, 'meta'>,
  sinks: { notes?: TaskRecord[]; events?: StampedEvent[] } = {},
): TaskRunnerDeps {
  return {
    workspace: new FakeWorkspace(repo),
    sandboxes: new FakeSandboxes(),
    worker: new FakeWorker(repo, []),
    human: new FakeHuman([]),
    notes: new NoMemory(),
    workerPrompt: workerPromptTemplate,
    clock: new ManualClock(),
    writeNote: async (record) => {
      sinks.notes?.push(structuredClone(record));
      return { path: '/repo/.agent-runner/task-T-1.md', sha256: 'digest-of-the-note' };
    },
    onEvent: (event) => sinks.events?.push(event),
    ...parts,
  };
}

/** Facts of a clean checkout at `headSha` with no commit since the base (`overrides` for the rest). */
export function cleanFacts(headSha: string, overrides: Partial<TaskFacts> = {}): TaskFacts {
  return {
    baseSha: headSha,
    headSha,
    commits: [],
    dirty: false,
    uncommitted: [],
    changedFiles: [],
    diffStat: '',
    diff: '',
    scopeViolations: [],
    ...overrides,
  };
}

/** A process that ended well: exit 0, no signal, 5 ms, with `overrides` (an exec's and a worker run's end). */
export function processEnded(overrides: Partial<ProcessEnd> = {}): ProcessEnd {
  return {
    exitCode: 0,
    signal: null,
    timedOut: false,
    interrupted: false,
    oomKilled: false,
    durationMs: 5,
    ...overrides,
  };
}

/** A finished exec as a runtime reports it: exit 0, no output, 5 ms, with `overrides`. */
export function finishedExec(overrides: Partial<ExecResult> = {}): ExecResult {
  return {
    ...processEnded(),
    stdoutTail: '',
    stderrTail: '',
    ...overrides,
  };
}
