/**
 * Ports: the only way the core touches the outside world. Adapters (src/sandbox, src/workspace, src/meta,
 * src/worker) implement them; tests wire honest fakes. No library type appears in a signature here.
 */
import type { MemoryBankView } from '../memory/memory-view.js';
import type { AgentRunnerError } from '../errors.js';
import type { DiskCapKinds, DiskCapReached } from './limits.js';
import type * as z from 'zod';
import type { Pattern } from '../patterns/pattern-library.js';
import type {
  SandboxRuntimeChoice,
  tokenUsageSchema,
  workerCommandSchema,
  workerEventSchema,
  workerModeSchema,
} from './records.js';

/** Time, so tests and the loop agree on what "now" is. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------
// Sandbox: src/core/sandbox-port.ts
// ---------------------------------------------------------------------------------------------------------

export type * from './sandbox-port.js';
import type { ProcessEnd } from './sandbox-port.js';

// ---------------------------------------------------------------------------------------------------------
// Worker
// ---------------------------------------------------------------------------------------------------------

export type WorkerMode = z.infer<typeof workerModeSchema>;
export type TokenUsage = z.infer<typeof tokenUsageSchema>;
export type WorkerCommand = z.infer<typeof workerCommandSchema>;

/** Live events of a worker run (also saved to the run's event log). */
export type WorkerEvent = z.infer<typeof workerEventSchema>;

export interface WorkerRunRequest {
  sandboxId: string;
  workerType?: string; // the worker the Meta-agent chose; absent: the task's default
  mode: WorkerMode;
  prompt: string;
  /** For `resume`: the thread to continue. */
  threadId?: string;
  /** Directory for this run's stdout/stderr/JSONL files. */
  runDir: string;
  timeoutMs: number;
  graceMs: number;
  onEvent?: (event: WorkerEvent) => void;
  signal?: AbortSignal;
  /**
   * The memory bank's text for the worker CLI's own instructions file (its home's AGENTS.md, CLAUDE.md, ...),
   * written there before the CLI starts ('' removes it); absent: the file is left alone.
   */
  instructions?: string;
}

export interface WorkerRunResult extends ProcessEnd {
  threadId: string | null;
  commands: WorkerCommand[];
  fileChanges: { path: string; kind: string }[];
  agentMessages: string[];
  finalMessage: string | null;
  usage: TokenUsage;
  /** Fatal errors only (`turn.failed`, a non-zero exit, a timeout). Retry notices are not here. */
  errors: string[];
  /** Non-fatal messages from the worker (retry notices, warnings), for the logs and for timeout diagnosis. */
  notices?: string[];
  /** Lines that were not JSON or events of an unknown type: kept, never fatal. */
  unparsedLines: number;
  failed: boolean; // the run did not succeed: non-zero exit, timeout, turn.failed
  /** Set when the model gateway refused a request of this run because the task's budget was spent: why. */
  budgetExhausted?: string;
  providerFailure?: AgentRunnerError; // failed on its model's answer (key, model, quota): the task ends
}

export interface WorkerAdapter {
  /** The default worker's type (a set of workers runs the one each request names). */
  readonly type: string;
  run(request: WorkerRunRequest): Promise<WorkerRunResult>;
}

// ---------------------------------------------------------------------------------------------------------
// Task-level ports used by the loop (src/core/task-runner.ts). app.ts adapts the concrete modules to them.
// ---------------------------------------------------------------------------------------------------------

import type {
  AcceptanceCriterion,
  CriterionCheckResult,
  DodOutcome,
  Plan,
  TaskFacts,
  Usage,
} from './types.js';

export type { AssessmentEvidence, MetaAgentPort, MetaView } from './meta-port.js';

/** Bounds of a validation step: Ctrl-C and the task's wall clock. */
export interface CheckBounds {
  signal?: AbortSignal;
  /** Wall clock left for the whole step; every check's own timeout is clipped to it. */
  timeoutMs: number;
}

/** The task's workspace as prepared on the host. */
export interface PreparedTask {
  branch: string;
  baseSha: string;
  worktreePath: string;
  dirtyStart: boolean;
  /** Human statement of the scope, also put in the worker prompt. */
  scopeStatement: string;
}

/** A check's command whose program the sandbox does not have (preflight). */
export interface MissingProgram {
  /** What the command belongs to: `DoD check test`, `criterion AC-2's command check`. */
  label: string;
  command: string;
  program: string;
}

/**
 * A preparation under way. `mountable` settles as soon as a sandbox can be created over the workspace (its
 * directory exists, the worker's user is known), before the files are checked out, so the container starts
 * meanwhile; `prepared` settles when everything is there. A failure rejects both (`mountable` only if it had
 * not settled yet).
 */
export interface WorkspacePreparation {
  mountable: Promise<void>;
  prepared: Promise<PreparedTask>;
}

export interface TaskWorkspacePort {
  prepare(): WorkspacePreparation;
  /**
   * Brings the worker's commits back to the task branch and observes the facts. `signal` (Ctrl-C, SIGTERM, the
   * wall clock) cuts the replay at once: it then rejects, and nothing after the cut reaches the branch.
   */
  observe(sandboxId: string, signal?: AbortSignal): Promise<TaskFacts>;
  /** `warmCaches`: a trusted run (the baseline) that fills the checks' caches (src/workspace/checks/check-caches.ts). */
  runDod(
    sandboxId: string,
    facts: Pick<TaskFacts, 'dirty'>,
    bounds: CheckBounds,
    options?: { warmCaches?: boolean },
  ): Promise<DodOutcome>;
  /** Seals the checks' caches, before any worker run; the sealed size in KiB (null: nothing sealed). */
  sealCheckCaches(sandboxId: string, signal?: AbortSignal): Promise<number | null>;
  /**
   * Preflight: the commands whose program (first word) the sandbox does not have, looked up in the checks'
   * own shell; the DoD's checks when `commands` is absent. Never throws for a lookup that failed itself.
   */
  missingPrograms(
    sandboxId: string,
    commands?: readonly { label: string; command: string }[],
    signal?: AbortSignal,
  ): Promise<MissingProgram[]>;
  /**
   * Runs the acceptance criteria's checks: `command` in the sandbox, `file_exists` on the task branch (host
   * git), `test` through the detected test framework; other kinds are recorded as not executed; a command
   * the DoD (`dod`, on the same tree) ran takes its result. */
  runCriteriaChecks(
    sandboxId: string,
    criteria: readonly AcceptanceCriterion[],
    facts: TaskFacts,
    bounds: CheckBounds,
    dod?: DodOutcome,
  ): Promise<CriterionCheckResult[]>;
  /**
   * The commit the sandbox has checked out now (its HEAD), as the replayed commit of the task it is: what a
   * check run there now runs on. Null when it is no commit the runner brought back, or not read in time.
   */
  checkedOutHead(sandboxId: string, signal?: AbortSignal): Promise<string | null>;
  /** Saves uncommitted worker changes to a WIP ref within `bounds`; returns where, or null (clean, not saved). */
  preserveUncommitted(sandboxId: string, bounds: CheckBounds): Promise<string | null>;
}

export interface SandboxProviderPort {
  /**
   * Creates and starts the task's sandbox over a mountable workspace whose files may still be arriving (no
   * command runs in it yet); returns its id.
   */
  create(): Promise<string>;
  /** Runs the set-up commands once the workspace is prepared. */
  setUp(sandboxId: string): Promise<void>;
  /** Removes the sandbox (or keeps it, under --keep-sandbox). */
  stop(sandboxId: string): Promise<void>;
  /** The disk cap the sandbox went over (its processes stopped), seen by its watch or measured now; or null. */
  checkDisk?(): Promise<DiskCapReached | null>;
  /** Each disk cap's kind (hard, or watched and why); null before the sandbox was created. */
  diskCaps?(): DiskCapKinds | null;
  /** The runtime the sandbox runs under and why (`sandbox.runtime`); null before the sandbox was created. */
  sandboxRuntime?(): SandboxRuntimeChoice | null;
}

/** An earlier task's note offered to the Meta-agent as memory: its title, its summary and where it is. */
export interface MemoryEntry {
  title: string;
  summary: string;
  path: string;
}

/** A plan made outside the task: the planner's answer for one task, or a subtask's criteria. */
export interface GivenPlan {
  plan: Plan;
  usage: Usage;
  /** Meta-agent calls it took, counted as the task's own (1 for the planner's call, 0 for a subtask's). */
  metaCalls: number;
}

/** The planner split the work: the task that was being prepared for it is not run (its workspace goes on). */
export interface PlanHandedOff {
  handedOff: true;
}

/** What the worker is told for one run: the task, its criteria and scope, the chosen patterns, the instruction. */
export interface WorkerPromptInput {
  taskId: string;
  title: string;
  branch: string;
  acceptanceCriteria: readonly { id: string; description: string; critical: boolean }[];
  scope: string;
  patterns: readonly Pattern[];
  instruction: string;
  /** The memory bank's section (summary and files of the active entries); absent or empty: none. */
  decisions?: string;
}

/** Renders the worker prompt (the adapter owns the template and reads it). */
export interface WorkerPromptPort {
  render(input: WorkerPromptInput): string;
}

export interface HumanPort {
  /** Asks the person; null when nobody can answer (headless). */
  ask(question: string): Promise<string | null>;
}

/** The memory bank as the task reads it: the active entries committed at the task's base. */
export interface MemoryBankPort {
  read(): Promise<MemoryBankView>;
}

export interface NoteStorePort {
  /** Summaries of earlier tasks' notes, for the Meta-agent's memory. */
  readMemory(excludeTaskId: string): Promise<MemoryEntry[]>;
}
